#!/usr/bin/env bash
# Session 34, call 2 (same machine as call 1): call 1 found the ordered split sum's first form
# (two fences, the partials read one split at a time at the launch's tail) slower than the atomic
# form had been; this build takes an acquire-release add and four splits' loads at once. The
# checks again (call 1's refusal test launched with host pointers and spoiled the context for
# the tests after it), then the A/B: cuBLASLt, the ordered sum at each stage count, and the
# atomic form (LG_QWEN_ROWS_ATOMIC_SPLITS=1) at 3 and 4 stages, and (new) 8 consumer warps a
# block, two a 16-row tile, each half of a stage's k (LG_QWEN_TMA_KHALVES=1), three rounds at 8B,
# two at 0.6B. Last,
# Nsight Compute on the TMA form's launches at 2 and 16 sequences (3 stages): call 1 put it at
# about 2.8 TB/s of weights on the H100 as on the H200 (thirty-first session), a ceiling the
# card's memory does not set; what stalls it?
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_lane_tests.txt" | head -20
qwen_tests 'RowDraws.*:HandwrittenBatch*:*TinyBatch*:*TinyFixture*:QwenGemvRows.*' LG_QWEN_GEMV_ROWS=2 | tail -4
qwen_tests 'RowDraws.*:HandwrittenBatch*:*TinyBatch*' LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_KHALVES=1 LG_QWEN_TMA_STAGES=3 | tail -4
echo "checks done at ${SECONDS} s"
r=LG_QWEN_GEMV_ROWS=2
k=LG_QWEN_TMA_KHALVES=1
ab_rounds tma_8b.txt 3 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s8:$r,LG_QWEN_TMA_STAGES=8 s4:$r,LG_QWEN_TMA_STAGES=4 s3:$r,LG_QWEN_TMA_STAGES=3 s2:$r,LG_QWEN_TMA_STAGES=2 \
  s8kh:$r,$k,LG_QWEN_TMA_STAGES=8 s4kh:$r,$k,LG_QWEN_TMA_STAGES=4 s3kh:$r,$k,LG_QWEN_TMA_STAGES=3 s2kh:$r,$k,LG_QWEN_TMA_STAGES=2 \
  s4atomic:$r,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_ATOMIC_SPLITS=1 s3atomic:$r,LG_QWEN_TMA_STAGES=3,LG_QWEN_ROWS_ATOMIC_SPLITS=1
ab_rounds tma_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s8:$r,LG_QWEN_TMA_STAGES=8 s4:$r,LG_QWEN_TMA_STAGES=4 s3:$r,LG_QWEN_TMA_STAGES=3 s2:$r,LG_QWEN_TMA_STAGES=2 \
  s4kh:$r,$k,LG_QWEN_TMA_STAGES=4 s3kh:$r,$k,LG_QWEN_TMA_STAGES=3
echo "benches done at ${SECONDS} s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 2 16; do
  LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=3 timeout 150 $ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section LaunchStats --print-details all -k regex:gemv_rows_tma --launch-skip 290 --launch-count 4 \
    $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 8 --batch $b --context 512 \
    --kv-tokens 40000 > "$out/ncu_tma_b$b.txt" 2>&1
  echo "ncu b$b rc $?"
  grep -E "gemv_rows_tma_kernel|Duration|DRAM Throughput|Issue Slots Busy|Eligible Warps|Achieved Occupancy|Stall|Block Limit Shared" \
    "$out/ncu_tma_b$b.txt" | head -40
done
echo "done at ${SECONDS} s"
exit 0
