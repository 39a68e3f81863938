#!/usr/bin/env bash
# Session 41, call 2 (any card): logit_bias and min_tokens on the device draw. The row-draw tests
# with edits that bias unseen tokens and hold others (LogitEdit's bias and kHeld), and requests with
# logit_bias / min_tokens drawn on the device as the host picks them (RowDraws.*).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2 3; do qwen_tests 'RowDraws.*'; done
exit 0
