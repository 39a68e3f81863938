#!/usr/bin/env bash
# Session 24, call 9: the final binary. v10 in the plan's rule (16-64 sequences from 1,024
# positions; 8-warp blocks while the (sequence, KV head) items fit one an SM, else 4). Tests whole,
# with v10 wherever the rows form would run (LG_QWEN_ATTN_V10=2), memcheck of the attention
# kernel tests (v10 at both widths), the hand-written Qwen locks; 8B and 0.6B steps, the rule
# against v10 off (LG_QWEN_ATTN_V10=0), alternated twice.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
LG_QWEN_ATTN_V10=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t \
  --gtest_filter='QwenKernels.DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_tests_v10.txt" 2>&1
echo "qwen tests v10 everywhere: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/qwen_tests_v10.txt" | head -8
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck $t \
  --gtest_filter='*DecodeAttentionRopeBatch*:QwenMixedAttention.*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_ATTN_V10=2 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for round in 1 2; do
  for shape in qwen3-8b qwen3-0.6b; do
    for v in rule off; do
      case $v in rule) e=() ;; off) e=(LG_QWEN_ATTN_V10=0) ;; esac
      { echo "== round $round $shape $v"
        env "${e[@]}" timeout 90 $lg bench --shape $shape --lane handwritten --prompt-len 8 \
          --decode-tokens 32 --batch 16,32,64,128 --context 512,1024,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      } >> "$out/bench.txt"
    done
  done
done
ab_table bench.txt
exit 0
