#!/usr/bin/env bash
# Session 26, call 2: LG_EARLY_AFTER_GEMM=1 now keeps v10 (kTcRows) on the programmatic port
# (cuda::note_dependent_waits_for_completion); =2 moves every edge (call 1's "early", which
# cost 10.6 -> 14.9 ms at 64 sequences of 2,048 positions). 0, 1, 2 alternated over the shapes
# where v10 runs (16-64 sequences past 1,024 positions) and a few where it does not; the compiled
# lane at 2,048 positions; an nsys trace of 64x2048 under 2 and 0 if nsys is there.
set -uo pipefail
source bench/device_env.sh
which nsys ncu 2>&1 | head -3
t=/tmp/lgb/bin/qwen_lane_tests
LG_EARLY_AFTER_GEMM=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t --gtest_filter='QwenKernels.*:HandwrittenBatch.*' > "$out/qwen_tests.txt" 2>&1
echo "qwen tests (knob 1): rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_tests.txt" | head
for round in 1 2; do
  for v in 0 1 2; do
    { echo "== round $round hw8b k$v"
      LG_EARLY_AFTER_GEMM=$v timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64,128 --context 512,1024,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      echo "== round $round c8b k$v"
      LG_EARLY_AFTER_GEMM=$v timeout 100 $lg bench --shape qwen3-8b --lane compiled --prompt-len 8 \
        --decode-tokens 32 --batch 16,64 --context 2048 --kv-tokens 150000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
if command -v nsys > /dev/null; then
  for v in 2 0; do
    LG_EARLY_AFTER_GEMM=$v timeout 120 nsys profile -o "$out/nsys_k$v" --force-overwrite true $lg bench --shape qwen3-8b --lane handwritten \
      --prompt-len 8 --decode-tokens 8 --batch 64 --context 2048 --kv-tokens 150000 > /dev/null 2>&1
    timeout 120 nsys stats --report cuda_gpu_kern_sum --format csv "$out/nsys_k$v.nsys-rep" 2>/dev/null | head -25 > "$out/nsys_k$v.csv"
    rm -f "$out"/nsys_k$v.sqlite
    echo "== nsys k$v"; cut -c1-200 "$out/nsys_k$v.csv" | head -14
  done
fi
exit 0
