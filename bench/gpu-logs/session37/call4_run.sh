#!/usr/bin/env bash
# Session 37, call 4: what the batched decode attention costs against its K/V bytes as the context
# grows (issue 13): Nsight Compute's duration of the decode attention kernel (20 launches past the
# first 100, caches as they run) of the 8B hand-written step at 16 and 64 sequences of 256-4,096
# positions, beside the step's bench line. On an H200, h200_rows_and_bars first.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
h200_rows_and_bars
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 16 64; do
  for c in 256 512 1024 2048 4096; do
    args="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch $b --context $c --kv-tokens 300000"
    line=$(timeout 60 $lg bench $args 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ ")
    timeout 120 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
      -k regex:attn_decode --launch-skip 100 --launch-count 20 $lg bench $args > "$out/ncu_attn_b${b}_c${c}.csv" 2>&1
    stats=$(grep -E '"gpu__time_duration.sum"' "$out/ncu_attn_b${b}_c${c}.csv" | awk -F'","' '{gsub(/[",]/,"",$NF); print $NF}' \
      | sort -n | awk '{a[NR]=$1} END {if (NR) print "n", NR, "min", a[1], "med", a[int(NR/2)+1], "max", a[NR]; else print "none"}')
    kern=$(grep -E '"gpu__time_duration.sum"' "$out/ncu_attn_b${b}_c${c}.csv" | head -1 | awk -F'","' '{print $5, $8, $9}' | cut -c1-90)
    echo "B $b ctx $c | $line | attn ns: $stats | $kern" | tee -a "$out/attn_sweep.txt"
  done
done
exit 0
