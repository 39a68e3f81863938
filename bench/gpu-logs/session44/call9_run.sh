#!/usr/bin/env bash
# Session 44, call 9 (any card): the engine's worker no longer wakes each request's thread itself.
# Call 5's trace put 0.35 ms (median) of host time between the serving run's steps (2% of the run);
# on the 2-core build machine, bench/engine_host_bench (128 sequences over the hash lane, a
# follower thread each) measured the gap before a 128-decode step at 253-853 us median, and 27-28
# us with the wake-ups handed to a thread of their own (JobWaker). The old binary (call 7's build,
# bundled as lg_old) against the new, issue 14's load, alternating, two rounds, each with
# LG_STEP_TRACE (the gaps between steps).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export SERVE_TRACE=1
for round in 1 2; do
  SERVE_BIN=/tmp/lgb/bin/lg_old serve_load "old$round"
  serve_load "new$round"
done
echo "done at ${SECONDS}s"
exit 0
