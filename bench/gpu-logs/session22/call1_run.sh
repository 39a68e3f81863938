#!/usr/bin/env bash
# Session 22, call 1: where the 30B-A3B one-token compiled step goes (issue 16), on main's binary
# (bfe99c4): the step, a launch profile (events between kernels, eager) and Nsight Compute's
# duration of each kernel of a few decode layers inside the graph (caches not flushed).
set -uo pipefail
source bench/device_env.sh
shape=bench/shapes/qwen3-30b-a3b
step_ms main $shape
step_ms main $shape
LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1 --context 512 \
  --kv-tokens 12000 --decode-tokens 16 > "$out/profile_b1.txt" 2>&1
grep -A24 "compiled lane T=1 B=1" "$out/profile_b1.txt" | head -26
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  --launch-skip 3000 --launch-count 40 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1 --context 512 \
  --kv-tokens 12000 --decode-tokens 64 > "$out/ncu_b1.csv" 2>&1
echo "ncu rc $?"
grep -E '"(gpu__time_duration.sum|dram__bytes_read.sum)"' "$out/ncu_b1.csv" | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | head -80
exit 0
