#!/usr/bin/env bash
# Session 12, call 6: why the 30B-A3B top-k stage (one block, 128 router logits) takes ~10 us:
# Nsight Compute's warp-state and scheduler sections for two of its one-token launches.
set -uo pipefail
source bench/device_env.sh
timeout 150 ncu --clock-control none --cache-control none --graph-profiling node -k regex:'k15_topk' \
  --launch-skip 60 --launch-count 2 --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis \
  $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --decode-tokens 4 \
  --batch 1 --context 512 > "$out/ncu_topk.txt" 2>&1
echo "ncu rc $?"; grep -E "Duration|Stall|Warp Cycles|Issued|Eligible|Active Warps|Registers|Grid Size|Theoretical|L1/TEX Hit|L2 Hit" "$out/ncu_topk.txt" | head -60
exit 0
