#!/usr/bin/env bash
# Session 33, call 5 (same machine): would the TMA row GEMV do as the H100's default? The
# hand-written tests that run the 22M model and the draw tests, and the Qwen locks batched with
# 16, under LG_QWEN_GEMV_ROWS=2. (An earlier try of this call, without the filter, ran with the
# 22M model's weights left out of the upload after call 2: its five failures were "no
# model.safetensors"; not kept.)
set -uo pipefail
source bench/device_env.sh
LG_QWEN_GEMV_ROWS=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*Pycode22m*:RowDraws.*' > "$out/qwen_lane_tests_tma.txt" 2>&1
echo "rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_lane_tests_tma.txt" | head
LG_QWEN_GEMV_ROWS=2 timeout 60 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
  --batch-with 16 2>&1 | grep -E "^(ok|FAIL|ERROR)"
