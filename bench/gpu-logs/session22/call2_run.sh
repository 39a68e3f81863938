#!/usr/bin/env bash
# Session 22, call 2: call 1's Nsight pass landed in the bench's fill of 512 positions (prefill
# chunks); the same at 32 positions, well past the fill: every kernel of three decode layers.
set -uo pipefail
source bench/device_env.sh
shape=bench/shapes/qwen3-30b-a3b
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for skip in 6000 12000; do
timeout 200 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  --launch-skip $skip --launch-count 30 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1 --context 32 \
  --kv-tokens 12000 --decode-tokens 128 > "$out/ncu_b1_$skip.csv" 2>&1
echo "ncu rc $?"
grep -E '"(gpu__time_duration.sum|dram__bytes_read.sum)"' "$out/ncu_b1_$skip.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | sed 's/gpu__time_duration.sum/us/; s/dram__bytes_read.sum/B/' | paste - - | awk '{print $1, $3, $6}' | cut -c1-100
done
exit 0
