#!/usr/bin/env bash
# Session 30, call 3 (H100): session 27 call 3 on the 4-stage TMA form (tma4), which beat
# cuBLASLt at 16 and 32 sequences in this session's run of session 27 call 2 (call 1): every hand-written
# lane test and the Qwen locks (alone, --batch-with 16) on it, memcheck of the batched decode graph
# tests, then 8B and 0.6B steps of 1-64 sequences at 512 and 2,048 positions, base/tma/tma4.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests_tma.txt" 2>&1
echo "qwen tests (tma): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_tests_tma.txt" | head
for bw in 0 16; do
  LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4 timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
    --batch-with $bw > "$out/locks_hw_tma_$bw.txt" 2>&1
  echo "hw locks (tma) batch-with $bw rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw_tma_$bw.txt"
done
LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer \
  --tool memcheck $t --gtest_filter='HandwrittenBatch.BatchedDecodeGraphsAgreeWithRunsAlone:QwenGemvRows.ClearThenAccumulateIsAStore' \
  > "$out/memcheck_tma.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_tma.txt" | head -5
ab_rounds bench.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,32,64 --context 512,2048 --kv-tokens 80000" \
  base: tma:LG_QWEN_GEMV_ROWS=2 tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,32,64 --context 512,2048 --kv-tokens 80000" \
  base: tma:LG_QWEN_GEMV_ROWS=2 tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4
exit 0
