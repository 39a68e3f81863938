#!/usr/bin/env bash
# Session 17, call 2: (a) the compiled lane's tensor-core split-KV form after its refactor
# (lg_dmma::warp_tile, shared with v9) at every step and for every GQA group
# (LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_WIDE_FORM=mma): the lane and batch tests, the
# MoE and Qwen locks; v9 after the same refactor: qwen_lane_tests' attention, mixed and batch
# tests, the Qwen locks in a batch of 16; (b) both lanes at 1-128 sequences of 512 positions,
# 8B and 0.6B, in one call (the ratio table); (c) v8 with 2 query heads a block at a group of 4
# (LG_QWEN_LONG_HEADS=2): its kernel test (G = 4 at head_dim 128; no lock model has that), batch-1 decode at
# 8,192 and 32,768 positions against 4 heads a block, alternated.
# The test binaries travel in lg.tar.xz (bin/).
set -uo pipefail
source bench/device_env.sh
mma=(LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_WIDE_FORM=mma)
env "${mma[@]}" LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledLane.*:CompiledBatch.*' > "$out/compiled_lane_tests_mma.txt" 2>&1
echo "compiled tests, mma at every step: rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests_mma.txt" | head
{ env "${mma[@]}" timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  env "${mma[@]}" timeout 90 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_mma.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_mma.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_hw.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for shape in qwen3-8b qwen3-0.6b; do
  for lane in handwritten compiled; do
    { echo "== $shape $lane"; timeout 80 $lg bench --shape $shape --lane $lane --prompt-len 2 --batch 1,16,64,128 \
      --context 512 --kv-tokens 90000 2>&1 | grep -E "^ +[0-9]+ +512 "; } | tee -a "$out/batch.txt"
  done
done
LG_QWEN_LONG_HEADS=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 60 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttentionRopeFromRawQkv*' > "$out/qwen_lane_tests_long2.txt" 2>&1
echo "v8 with 2 heads a block, kernel test: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_long2.txt"
for env in LG_QWEN_LONG_HEADS=4 LG_QWEN_LONG_HEADS=2 LG_QWEN_LONG_HEADS=4 LG_QWEN_LONG_HEADS=2; do
  r=$(env $env timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 \
    --context 8192,32768 2>&1 | grep -E '^ +1 +(8192|32768)' | tr '\n' ' ')
  echo "$env: $r" | tee -a "$out/b1_long.txt"
done
exit 0
