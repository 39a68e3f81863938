#!/usr/bin/env bash
# Session 44, call 5 (any card; call 4's build, default settings): issue 14's serving load once
# with LG_STEP_TRACE (every lane step: start, T rows, B sequences, wall and GPU ms), to see how
# the run's steps split now (session 15 traced it on the H200): call 4's one flash launch for all
# of a step's prompt chunks changed nothing (+0.2%), so how many steps carry several chunks?
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
SERVE_TRACE=1 serve_load ""
echo "done at ${SECONDS}s"
exit 0
