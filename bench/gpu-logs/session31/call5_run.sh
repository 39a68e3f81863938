#!/usr/bin/env bash
# Session 31, call 5: the device draw's top-k path (draw_top_k: a top-k of at most 1,024 without
# min_p gathers the tokens above a bound into shared memory and finishes there) and the radix
# passes skipping warps with nothing to add. The draw tests and their memcheck; the sampled
# decode step (lg bench --sample lane: temperature 0.6, top-k 20, top-p 0.95) against greedy.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
qwen_tests 'RowDraws.*'
grep -E "row draws" "$out/qwen_tests_1.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  $t --gtest_filter='RowDraws.*' > "$out/memcheck_draws.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_draws.txt" | head -5
for shape in qwen3-8b qwen3-0.6b; do
  for lane in handwritten compiled; do
    for mode in none lane; do
      timeout 150 $lg bench --shape $shape --lane $lane --prompt-len 8 --decode-tokens 24 --batch 1,16,64,128 --context 512 \
        --kv-tokens 80000 --sample $mode > "$out/bench_${shape}_${lane}_$mode.txt" 2>&1
      echo "$shape $lane sample=$mode rc $?"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_${shape}_${lane}_$mode.txt"
    done
  done
done
exit 0
