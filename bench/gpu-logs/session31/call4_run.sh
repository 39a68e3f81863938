#!/usr/bin/env bash
# Session 31, call 4: the device draws after call 3's fix (a top-p bound below top-k's let tokens
# past top-k back in) and the kernel's passes testing the key before the exp. The draw tests and
# their memcheck; then what a sampled decode step costs: `lg bench --sample none|lane|host`
# (temperature 0.6, top-k 20, top-p 0.95 on every sequence; host = each logits row to the host
# and drawn there, what every sampled request paid before), 8B and 0.6B, both lanes.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
qwen_tests 'RowDraws.*'
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  $t --gtest_filter='RowDraws.*' > "$out/memcheck_draws.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_draws.txt" | head -5
for shape in qwen3-8b qwen3-0.6b; do
  for lane in handwritten compiled; do
    for mode in none lane host; do
      batches=1,16,64,128
      [ $lane = compiled ] && [ $mode = host ] && continue
      timeout 150 $lg bench --shape $shape --lane $lane --prompt-len 8 --decode-tokens 24 --batch $batches --context 512 \
        --kv-tokens 80000 --sample $mode > "$out/bench_${shape}_${lane}_$mode.txt" 2>&1
      echo "$shape $lane sample=$mode rc $?"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_${shape}_${lane}_$mode.txt"
    done
  done
done
exit 0
