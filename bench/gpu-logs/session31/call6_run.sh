#!/usr/bin/env bash
# Session 31, call 6: the device draw's gathered path for every cut (draw_gathered: top-k, top-p,
# min_p; a bound from the threads' largest keys, eleven bounds counted in one pass where top-k's
# own does not do). The draw tests and their memcheck; the sampled 8B step at Qwen3's sampling
# (top-k 20, top-p 0.95), top-p alone (0.95), temperature alone, against greedy.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
qwen_tests 'RowDraws.*'
grep -E "row draws" "$out/qwen_tests_1.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  $t --gtest_filter='RowDraws.*' > "$out/memcheck_draws.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_draws.txt" | head -5
b="--shape qwen3-8b --prompt-len 8 --decode-tokens 24 --batch 1,16,64,128 --context 512 --kv-tokens 80000"
for round in 1 2; do
  for v in "none 0.6,20,0.95" "lane 0.6,20,0.95" "lane 0.6,0,0.95" "lane 1,0,1" "lane 0.7,50,1"; do
    set -- $v
    timeout 150 $lg bench $b --lane handwritten --sample $1 --sample-params $2 > "$out/bench_hw_$1_${2//,/-}_$round.txt" 2>&1
    echo "8B handwritten sample=$1 params=$2 round $round rc $?"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_hw_$1_${2//,/-}_$round.txt"
  done
done
timeout 150 $lg bench $b --lane compiled --sample lane --sample-params 0.6,0,0.95 > "$out/bench_compiled_topp.txt" 2>&1
echo "8B compiled top-p alone rc $?"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_compiled_topp.txt"
exit 0
