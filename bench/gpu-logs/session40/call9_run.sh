#!/usr/bin/env bash
# Session 40, call 9 (H200): call 8's draw tests with the 22M model carried (call 8 left it out to
# carry llama.cpp; the tests failed on its absence): the TMA row GEMV is the H200's default up to 16
# sequences now, and RowDraws compare two runs' draws, so the lane's logits must repeat run to run.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
qwen_tests 'RowDraws.*:*Sampl*:*Penalt*' | tail -6
exit 0
