#!/usr/bin/env bash
# Session 15, call 6: the review's refactor of v6 and v9 (GqaChunk, gqa_write_pos_kv) checked:
# the decode-attention kernel tests (both forms, the poisoned position rows they must write), the
# mixed-step tests and the batch tests against runs alone.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
exit 0
