#!/usr/bin/env bash
# Session 12, call 3: call 2's changes without the out-of-line reductions (they measured slower),
# and the decode GEMV of a stage with few outputs (<= 2,048) issuing each weight row whole
# (LG_COMPILED_GEMV_ROW, A/B below). The compiled-lane tests, the MoE and Qwen locks on the
# compiled lane, B = 1 steps with the knob on and off, the 30B-A3B batches, and Nsight Compute's
# kernel times of the 30B-A3B one-token step (caches left as the step leaves them).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/lock_compiled_moe.txt"
timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_qwen.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/lock_compiled_qwen.txt"
for knob in 1 0 1 0; do
  for shape in bench/shapes/qwen3-30b-a3b qwen3-0.6b; do
    f="$out/bench_row${knob}_$(basename $shape).txt"
    LG_COMPILED_GEMV_ROW=$knob timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 \
      --batch 1 --context 512 > "$f" 2>&1
    echo "row=$knob $(basename $shape): $(grep -E '^ +1 +512' "$f" | awk '{print $3" ms ("$NF"x)"}')"
  done
done
timeout 150 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2048 --batch 1,16,64 \
  --context 512 --kv-tokens 40000 > "$out/bench_30b_a3b.txt" 2>&1
grep -E "^ +[0-9]+ +512|prefill" "$out/bench_30b_a3b.txt"
m=gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread
timeout 150 ncu --clock-control none --cache-control none --graph-profiling node -k regex:'^k[0-9]' --metrics $m --csv \
  $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --decode-tokens 2 \
  --batch 1 --context 512 > /tmp/ncu.csv 2> "$out/ncu_30b_a3b.err"
echo "ncu rc $?"; python3 scripts/ncu_summary.py /tmp/ncu.csv 24 > "$out/ncu_30b_a3b.txt"; head -16 "$out/ncu_30b_a3b.txt"
exit 0
