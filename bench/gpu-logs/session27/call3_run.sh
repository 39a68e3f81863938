#!/usr/bin/env bash
# Session 27, call 3 (planned; run it after call 2 if the TMA form beats cuBLASLt at 16 or 32
# sequences): what making LG_QWEN_GEMV_ROWS=2 the default needs. Every hand-written lane test and
# the Qwen locks (alone and --batch-with 16) on the TMA form, compute-sanitizer memcheck of the
# batched decode graph tests on it, then the 8B and 0.6B steps of 16 and 32 sequences at 512 and
# 2,048 positions against the default, two rounds alternated.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_QWEN_GEMV_ROWS=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests_tma.txt" 2>&1
echo "qwen tests (tma): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_tests_tma.txt" | head
for bw in 0 16; do
  LG_QWEN_GEMV_ROWS=2 timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
    --batch-with $bw > "$out/locks_hw_tma_$bw.txt" 2>&1
  echo "hw locks (tma) batch-with $bw rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw_tma_$bw.txt"
done
LG_QWEN_GEMV_ROWS=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer \
  --tool memcheck $t --gtest_filter='HandwrittenBatch.BatchedDecodeGraphsAgreeWithRunsAlone:QwenGemvRows.ClearThenAccumulateIsAStore' \
  > "$out/memcheck_tma.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_tma.txt" | head -5
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma:LG_QWEN_GEMV_ROWS=2
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma:LG_QWEN_GEMV_ROWS=2
exit 0
