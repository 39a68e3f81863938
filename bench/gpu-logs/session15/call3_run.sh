#!/usr/bin/env bash
# Session 15, call 3: v9, the batched decode attention on the tensor cores
# (attention_decode_gqa_tc.cuh), against v6 (LG_QWEN_ATTN_TC=0): its kernel test and the batch
# tests both ways, the hand-written Qwen locks, and the 8B step at serving's contexts with v6's
# split target (LG_QWEN_GQA_BLOCKS_PER_SM: 8 until now, one split at B = 128); then Nsight Compute
# kernel durations and DRAM bytes of one B = 128 step at 1,024 positions.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests
filter='*DecodeAttentionRopeBatch*:HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*:*TinyFixture*'
for tc in 1 0; do
  LG_QWEN_ATTN_TC=$tc LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/qwen_lane_tests \
    --gtest_filter="$filter" > "$out/qwen_lane_tests_tc$tc.txt" 2>&1
  echo "qwen_lane_tests tc=$tc rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_tc$tc.txt" | head
done
{ timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_handwritten.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
for round in 1 2; do
  for v in "1 8" "0 8" "1 16" "0 16" "1 32" "0 32"; do
    set -- $v
    LG_QWEN_ATTN_TC=$1 LG_QWEN_GQA_BLOCKS_PER_SM=$2 timeout 100 $lg bench --shape qwen3-8b --lane handwritten \
      --prompt-len 16 --decode-tokens 32 --batch 16,64,128 --context 512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/tc $1 bps $2 /" | tee -a "$out/ab.txt"
  done
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 2 --batch 128 --context 1024 > "$out/ncu_b128.csv" 2>&1
echo "ncu rc $?"
python3 bench/gpu-logs/session15/ncu_step.py "$out/ncu_b128.csv" > "$out/ncu_b128_step.txt" 2>&1; head -14 "$out/ncu_b128_step.txt"
xz -9 "$out/ncu_b128.csv"
exit 0
