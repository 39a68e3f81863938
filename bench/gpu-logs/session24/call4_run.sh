#!/usr/bin/env bash
# Session 24, call 4: v10 (attention_decode_tc_rows.cuh: a block a KV head, each warp streaming
# 16-key tiles from the paged cache straight into mma fragments; LG_QWEN_ATTN_V10=1 puts it where
# the plan says v8's rows form). Its kernel tests (the batch and mixed forms name it explicitly),
# the batched lane tests and memcheck with it in the plan, the hand-written Qwen locks with it;
# 8B steps at 16-128 sequences, plan against v10, alternated twice.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
LG_QWEN_ATTN_V10=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t \
  --gtest_filter='QwenKernels.DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_tests_v10.txt" 2>&1
echo "qwen tests v10 in the plan: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|attention H=" "$out/qwen_tests_v10.txt" | head -20
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_QWEN_ATTN_V10=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck $t \
  --gtest_filter='*DecodeAttentionRopeBatch*:QwenMixedAttention.*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ LG_QWEN_ATTN_V10=1 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for round in 1 2; do
  for v in plan v10; do
    case $v in plan) e=() ;; v10) e=(LG_QWEN_ATTN_V10=1) ;; esac
    { echo "== round $round $v"
      env "${e[@]}" timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
        --decode-tokens 32 --batch 16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0
