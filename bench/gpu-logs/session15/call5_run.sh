#!/usr/bin/env bash
# Session 15, call 5: v9 issuing its first tile before forming the queries (split 0 too, when its
# chunk has 3+ tiles). Tests of both forms; the 8B step with v9 everywhere (LG_QWEN_ATTN_TC=2),
# the rule (1) and v6 (0), at 128 / 512 / 1,024 positions; the 0.6B step with the rule against v6.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*' > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_handwritten.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
for round in 1 2; do
  for tc in 2 1 0; do
    LG_QWEN_ATTN_TC=$tc timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
      --decode-tokens 32 --batch 16,64,128 --context 128,512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/8b tc $tc /" | tee -a "$out/ab.txt"
  done
  for tc in 1 0; do
    LG_QWEN_ATTN_TC=$tc timeout 100 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 16 \
      --decode-tokens 32 --batch 64,128 --context 512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/0.6b tc $tc /" | tee -a "$out/ab.txt"
  done
done
exit 0
