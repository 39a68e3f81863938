#!/usr/bin/env bash
# Session 39, call 4: binaries of branch s39-race with session 38's call7_rows_early.patch applied
# (the LG_QWEN_ROWS_EARLY lab knob). On an H200: the question waiting since session 35
# (h200_rows_and_bars). On any other card: session 38's call 7 (call2_run.sh: v8's rows form with
# its first keys' loads early, tests and the step against the default).
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in
  *H200*) bash bench/gpu-logs/session39/call1_run.sh ;;
  *) bash bench/gpu-logs/session39/call2_run.sh ;;
esac
exit 0
