#!/usr/bin/env bash
# Session 44, call 6 (H200 only; any build of main since call 7): call 5's traced serving run on
# the card of issue 14's bar, to split its 23.4 s (session 40; 1.65x the serial floor, where the
# H100's run is 1.41x) into decode-only and mixed steps as call 5 did on the H100. (Call 2,
# issue 13's 16 x 512 knobs, needs session 38's early-keys patch in its build.)
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
SERVE_TRACE=1 serve_load ""
echo "done at ${SECONDS}s"
exit 0
