#!/usr/bin/env bash
# Session 17, call 8: v8 replaced by call 7's rows form (two query heads a block); its knob
# LG_QWEN_LONG_HEADS=4 takes all 4 heads of a KV head a block (each K/V row read once; 2 rounds of
# loads in flight a warp, not 4). The decode-attention kernel tests at both, the Qwen locks with
# v8 at every position, then one sequence of the 8B shape at 8,192 and 32,768 positions, 2 heads
# a block against 4, alternated.
set -uo pipefail
source bench/device_env.sh
for heads in 2 4; do
  LG_QWEN_LONG_HEADS=$heads LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 60 /tmp/lgb/bin/qwen_lane_tests \
    --gtest_filter='*DecodeAttention*' > "$out/qwen_lane_tests_heads$heads.txt" 2>&1
  echo "v8, $heads heads a block, tests: rc $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/qwen_lane_tests_heads$heads.txt" | head
done
LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --compare-logits > "$out/locks_v8.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|relative" "$out/locks_v8.txt"
for heads in 2 4 2 4; do
  r=$(LG_QWEN_LONG_HEADS=$heads timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 \
    --decode-tokens 32 --context 8192,32768 2>&1 | grep -E '^ +1 +(8192|32768)' | tr '\n' ' ')
  echo "heads $heads: $r" | tee -a "$out/b1_long.txt"
done
exit 0
