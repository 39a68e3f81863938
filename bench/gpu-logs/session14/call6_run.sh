#!/usr/bin/env bash
# Session 14, call 6: the 30B-A3B one-token step's experts kernels (gate/up k16, down k19) and
# its top-k (k15) under Nsight Compute, in decode steps (graph nodes, caches and clocks as they
# run): speed of light, memory workload, warp stalls, occupancy.
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats"
timeout 300 ncu --clock-control none --cache-control none --graph-profiling node -k regex:'^k1(5_topk|6_experts|9_experts)$' \
  --launch-skip 4000 -c 6 $sec $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 \
  --decode-tokens 64 --batch 1 --context 512 --kv-tokens 12000 > "$out/ncu_experts_t1.txt" 2>&1; echo "ncu rc $?"
grep -E "^  k1[569]_|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Block Limit|Grid Size|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" \
  "$out/ncu_experts_t1.txt" | head -120
exit 0
