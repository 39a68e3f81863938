#!/usr/bin/env bash
# Session 15, call 5: v9 issuing its first tile before forming the queries (split 0 too, when its
# chunk has 3+ tiles), and v9 in blocks of 2 warps / 32-key tiles (LG_QWEN_ATTN_TC_WARPS=2: 44 KB
# of shared memory, five blocks an SM, against 74 KB and three). Tests of both forms (and of the
# 2-warp blocks); the 8B step with v9 everywhere (LG_QWEN_ATTN_TC=2) in 4- and 2-warp blocks, the
# rule (1) and v6 (0), at 512 / 1,024 positions; the 0.6B step with the rule against v6 (one round).
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests
for w in 4 2; do
  filter='*DecodeAttention*:QwenMixedAttention.*'
  [ $w = 4 ] && filter="$filter:HandwrittenBatch.*:*TinyBatch*"
  LG_QWEN_ATTN_TC_WARPS=$w LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests \
    --gtest_filter="$filter" > "$out/qwen_lane_tests_w$w.txt" 2>&1
  echo "qwen_lane_tests warps $w rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_w$w.txt" | head
done
timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_handwritten.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
for round in 1; do
  for v in "2 4" "2 2" "1 4" "0 4"; do
    set -- $v
    LG_QWEN_ATTN_TC=$1 LG_QWEN_ATTN_TC_WARPS=$2 timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
      --decode-tokens 32 --batch 16,64,128 --context 512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/8b tc $1 warps $2 /" | tee -a "$out/ab.txt"
  done
  for tc in 1 0; do
    LG_QWEN_ATTN_TC=$tc timeout 100 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 16 \
      --decode-tokens 32 --batch 64,128 --context 512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/0.6b tc $tc /" | tee -a "$out/ab.txt"
  done
done
exit 0
