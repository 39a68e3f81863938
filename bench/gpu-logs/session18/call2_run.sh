#!/usr/bin/env bash
# Session 18, call 2: the rows form's knobs at the batched decode step. LG_QWEN_ROWS_PREFETCH=N:
# a block sends the first N keys of its chunk to L2 before its PDL wait (0: v8's prefetch_split,
# the first two iterations' rows); LG_QWEN_LONG_HEADS=2: two query heads a block at a group of 4
# (rows read twice, 4 rounds of loads in flight a warp). 8B at 16-128 sequences of 128, 512 and
# 1,024 positions, v6/v9 (LG_QWEN_ATTN_ROWS=0) alongside; two rounds, variants alternated.
set -uo pipefail
source bench/device_env.sh
LG_QWEN_ROWS_PREFETCH=256 LG_QWEN_ATTN_ROWS=128 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 \
  /tmp/lgb/bin/qwen_lane_tests --gtest_filter='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' \
  > "$out/qwen_lane_tests_prefetch.txt" 2>&1
echo "qwen tests, prefetch 256: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_prefetch.txt" | head
variants=("LG_QWEN_ATTN_ROWS=0" "LG_QWEN_ATTN_ROWS=128" "LG_QWEN_ATTN_ROWS=128 LG_QWEN_ROWS_PREFETCH=128"
          "LG_QWEN_ATTN_ROWS=128 LG_QWEN_ROWS_PREFETCH=256" "LG_QWEN_ATTN_ROWS=128 LG_QWEN_ROWS_PREFETCH=1024"
          "LG_QWEN_ATTN_ROWS=128 LG_QWEN_LONG_HEADS=2")
for round in 1 2; do
  for v in "${variants[@]}"; do
    { echo "== round $round qwen3-8b $v"
      env $v timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 32 \
        --batch 16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } | tee -a "$out/ab.txt"
  done
done
for v in "LG_QWEN_ATTN_ROWS=0" "LG_QWEN_ATTN_ROWS=128" "LG_QWEN_ATTN_ROWS=128 LG_QWEN_ROWS_PREFETCH=256"; do
  { echo "== qwen3-0.6b $v"
    env $v timeout 90 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 16 --decode-tokens 32 \
      --batch 16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
  } | tee -a "$out/ab06.txt"
done
exit 0
