#!/usr/bin/env bash
# Session 12, call 2: (a) the experts kernels read stored activation rows as float4 (the lambda
# form made 8 scalar loads per 8 weights); (b) an element stage's stores of one shape share one
# loop; (c) memoised reductions and the top-k ranking as functions of their own, not inlined at
# every call (LG_COMPILED_REDUCE_CALLS, A/B below). The compiled-lane tests, the MoE lock, the
# decode step with the knob on and off, and Nsight Compute's kernel times of the 30B-A3B step.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 240 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; tail -1 "$out/lock_compiled_moe.txt"
for knob in 1 0 1 0; do
  for shape in bench/shapes/qwen3-30b-a3b qwen3-0.6b qwen3-8b; do
    b=1; [ "$shape" = bench/shapes/qwen3-30b-a3b ] && b=1,16
    LG_COMPILED_REDUCE_CALLS=$knob timeout 120 $lg bench --shape $shape --lane compiled --prompt-len 2 \
      --batch $b --context 512 > "$out/bench_${knob}_$(basename $shape).txt" 2>&1
    echo "knob=$knob $(basename $shape): $(grep -E '^ +[0-9]+ +512' "$out/bench_${knob}_$(basename $shape).txt" | awk '{print $1": "$3" ms ("$NF"x)"}' | tr '\n' ' ')"
  done
done
m=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread
timeout 200 ncu --clock-control none --cache-control none --graph-profiling node --metrics $m --csv \
  $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --decode-tokens 2 \
  --batch 1 --context 512 > "$out/ncu_30b_a3b.csv" 2> "$out/ncu_30b_a3b.err"
echo "ncu rc $?"
exit 0
