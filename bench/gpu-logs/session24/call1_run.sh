#!/usr/bin/env bash
# Session 24, call 1: v8's staged form (LG_QWEN_ROWS_STAGES=N: K/V rows by cp.async into a ring of
# N iterations in shared memory, N - 1 ahead of the math; 0 = the register form). Kernel tests at
# every N, qwen_lane_tests whole and memcheck at the default (3), the hand-written Qwen locks; 8B
# batched steps where the rows form runs (16-64 sequences) and one sequence at 32,768 positions,
# each N against 0, alternated twice.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests (stages 3): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
for st in 0 2 4; do
  LG_QWEN_ROWS_STAGES=$st LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 100 $t \
    --gtest_filter='QwenKernels.DecodeAttention*:HandwrittenBatch.BatchedDecodeGraphsAgreeWithRunsAlone' \
    > "$out/qwen_attn_tests_st$st.txt" 2>&1
  echo "attention tests stages $st: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_attn_tests_st$st.txt" | head -4
done
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck $t \
  --gtest_filter='*DecodeAttentionRope*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for round in 1 2; do
  for st in 0 3 2 4; do
    { echo "== round $round stages $st"
      LG_QWEN_ROWS_STAGES=$st timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
        --decode-tokens 32 --batch 16,32,64 --context 128,512,1024 --kv-tokens 80000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
    b1_32k "stages $st" handwritten LG_QWEN_ROWS_STAGES=$st
  done
done
ab_table bench.txt
exit 0
