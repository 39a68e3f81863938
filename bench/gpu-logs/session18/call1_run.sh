#!/usr/bin/env bash
# Session 18, call 1: v8's rows form over a batch (BatchAttnForm::kRows, LG_QWEN_ATTN_ROWS = the
# largest batch that takes it) as the batched decode step's attention, against v6/v9. (a) the
# attention, mixed-step and batch tests with the rows form at every batch and by default (v8's
# 4-heads default and v9's lg_dmma refactor had not run on the GPU since session 17); the Qwen
# locks on the hand-written lane (rows form: --compare-logits, --batch-with 16; v8 at every
# position); (b) the launch profile of an 8B step of 16 sequences at 512 positions, each form;
# (c) 8B and 0.6B decode steps at 16-128 sequences of 512 and 1,024 positions, forms alternated;
# (d) one sequence of the 8B shape at 32,768 positions (v8's default of 4 heads a block).
set -uo pipefail
source bench/device_env.sh
tests='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*'
for rows in 0 128; do
  LG_QWEN_ATTN_ROWS=$rows LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/lgb/bin/qwen_lane_tests \
    --gtest_filter="$tests" > "$out/qwen_lane_tests_rows$rows.txt" 2>&1
  echo "qwen tests, LG_QWEN_ATTN_ROWS=$rows: rc $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_rows$rows.txt" | head
done
{ LG_QWEN_ATTN_ROWS=128 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_ATTN_ROWS=128 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for rows in 0 16; do
  LG_QWEN_ATTN_ROWS=$rows LG_PROFILE_LAUNCHES=1 timeout 80 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
    --decode-tokens 8 --batch 16 --context 512 > "$out/profile_b16_rows$rows.txt" 2>&1
  echo "== rows $rows"; grep -A12 "profile hand-written batched" "$out/profile_b16_rows$rows.txt" | head -13
done
for round in 1 2; do
  for rows in 0 128; do
    for shape in qwen3-8b qwen3-0.6b; do
      { echo "== round $round $shape LG_QWEN_ATTN_ROWS=$rows"
        LG_QWEN_ATTN_ROWS=$rows timeout 90 $lg bench --shape $shape --lane handwritten --prompt-len 16 --decode-tokens 32 \
          --batch 16,32,64,128 --context 512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      } | tee -a "$out/ab.txt"
    done
  done
done
timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 --context 32768 2>&1 |
  grep -E '^ +1 +32768' | tee "$out/b1_32k.txt"
exit 0
