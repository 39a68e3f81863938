#!/usr/bin/env bash
# Session 14, call 5: (a) session 13's hand-written lock failure (1 in 17 runs): the Qwen locks on
# the hand-written lane under compute-sanitizer racecheck and memcheck, then in a loop with
# CUDA_LAUNCH_BLOCKING=1; (b) where the 30B-A3B one-token step's 3.26 ms go: Nsight Compute's
# time and DRAM bytes per kernel over a decode step (graph nodes, caches and clocks as they run).
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
dir=$(qwen_locks_dir)
for tool in racecheck memcheck; do
  timeout 100 compute-sanitizer --tool $tool $lg lock check --lane handwritten --locks "$dir" \
    --shared /tmp/lgshared --compare-logits > "$out/$tool.txt" 2>&1; echo "$tool rc $?"; tail -3 "$out/$tool.txt"
done
end=$((SECONDS + 40)); i=0; fails=0
while [ $SECONDS -lt $end ]; do
  i=$((i + 1))
  CUDA_LAUNCH_BLOCKING=1 timeout 60 $lg lock check --lane handwritten --locks "$dir" --shared /tmp/lgshared \
    --compare-logits > "$out/run.txt" 2>&1 || { fails=$((fails + 1)); cp "$out/run.txt" "$out/fail_$i.txt"; }
done
echo "hand-written Qwen locks, CUDA_LAUNCH_BLOCKING=1: $i runs, $fails failed"
timeout 240 ncu --clock-control none --cache-control none --graph-profiling node --launch-skip 1200 -c 440 --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread,launch__grid_size \
  $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --decode-tokens 4 --batch 1 \
  --context 512 --kv-tokens 12000 > "$out/ncu_30b_b1.csv" 2> "$out/ncu_30b_b1.err"; echo "ncu rc $?"
python3 scripts/ncu_summary.py "$out/ncu_30b_b1.csv" 30 | tee "$out/ncu_30b_b1_summary.txt"
rm -f "$out/ncu_30b_b1.csv"
exit 0
