#!/usr/bin/env bash
# Session 30, calls 9 and 10 (H100): the new defaults (branch s30): the batched decode graphs of up to 32
# sequences on the TMA row GEMV (8 stages at <= 8 sequences, 4 above) and v10 launched without
# PDL. Every hand-written lane test, the batched ones on cuBLASLt too (LG_QWEN_GEMV_ROWS=0), the
# Qwen locks alone and --batch-with 16, memcheck of the batched decode graph tests, then the 8B and
# 0.6B steps of 1-64 sequences at 512 and 2,048 positions against cuBLASLt, one round.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests_all.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_tests_all.txt" | head
qwen_tests 'HandwrittenBatch.*' LG_QWEN_GEMV_ROWS=0
for bw in 0 16; do
  timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
    --batch-with $bw > "$out/locks_hw_$bw.txt" 2>&1
  echo "hw locks batch-with $bw rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw_$bw.txt"
done
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer \
  --tool memcheck $t --gtest_filter='HandwrittenBatch.BatchedDecodeGraphsAgreeWithRunsAlone:QwenGemvRows.ClearThenAccumulateIsAStore' \
  > "$out/memcheck.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.txt" | head -5
ab_rounds bench.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,2,8,16,32,64 --context 512,2048 --kv-tokens 140000" \
  new: cublaslt:LG_QWEN_GEMV_ROWS=0
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,2,8,16,32,64 --context 512,2048 --kv-tokens 140000" \
  new: cublaslt:LG_QWEN_GEMV_ROWS=0
exit 0
