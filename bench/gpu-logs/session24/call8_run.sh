#!/usr/bin/env bash
# Session 24, call 8: v10 with 8-warp blocks (one an SM: at 16 sequences one wave of 128 blocks
# at one split, the position's K/V formed by its own warp) against 4-warp blocks and the plan.
# Kernel tests with v10 in the plan at both widths; 8B steps at 16-128 sequences, contexts 16-2,048.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
for w in 8 4; do
  LG_QWEN_ATTN_V10=1 LG_QWEN_ATTN_V10_WARPS=$w LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t \
    --gtest_filter='QwenKernels.DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_tests_v10_w$w.txt" 2>&1
  echo "qwen tests v10 $w warps: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/qwen_tests_v10_w$w.txt" | head -8
done
for round in 1 2; do
  for v in plan v10w8 v10w4; do
    case $v in plan) e=() ;; v10w8) e=(LG_QWEN_ATTN_V10=1 LG_QWEN_ATTN_V10_WARPS=8) ;; v10w4) e=(LG_QWEN_ATTN_V10=1 LG_QWEN_ATTN_V10_WARPS=4) ;; esac
    { echo "== round $round $v"
      env "${e[@]}" timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64,128 --context 16,128,512,1024,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0
