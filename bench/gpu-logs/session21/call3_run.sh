#!/usr/bin/env bash
# Session 21, call 3: why the split-KV chunk loop streams the cache at half the bandwidth at 32,768
# positions (call 2: 36M -> 23M instructions, no faster; half the loads in flight, twice as slow).
# Nsight Compute full sections and per-instruction stall samples of the compiled decode attention
# (the default 2-head form, the 4-head PIPE form); A/B lines with 3 blocks an SM (80 registers).
set -uo pipefail
source bench/device_env.sh
for r in 1 2; do
  b1_32k new compiled
  b1_32k m3r2 compiled LG_COMPILED_ATTN_MINB=3 LG_COMPILED_ATTN_BPS=3 LG_COMPILED_ATTN_R=2
  b1_32k q4m3 compiled LG_COMPILED_ATTN_MINB=3 LG_COMPILED_ATTN_BPS=3 LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1
  b1_32k m3r4 compiled LG_COMPILED_ATTN_MINB=3 LG_COMPILED_ATTN_BPS=3
done
echo "32k done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "def:LG_COMPILED_ATTN_LAZY=0" "q4pipe:LG_COMPILED_ATTN_QNE=32"; do
  IFS=: read -r label envs <<< "$v"
  env $envs timeout 150 $ncu --clock-control none --set full --import-source no -k 'regex:^k[0-9]+_attention$' \
    --launch-skip 36 --launch-count 1 -o /tmp/rep_$label $lg bench --shape qwen3-8b --lane compiled \
    --prompt-len 512 --decode-tokens 4 --context 32768 > "$out/ncu_full_$label.log" 2>&1
  echo "$label rc $? at ${SECONDS}s"
  $ncu -i /tmp/rep_$label.ncu-rep --page details > "$out/ncu_full_$label.txt" 2>&1
  $ncu -i /tmp/rep_$label.ncu-rep --page source --print-source sass --csv > "$out/ncu_sass_$label.csv" 2>&1
  xz -9 "$out/ncu_sass_$label.csv"
  grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|L2 Hit|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Eligible Warps" "$out/ncu_full_$label.txt" | head -14
done
exit 0
