#!/usr/bin/env bash
# Session 37, call 6: where the batched decode attention's fixed cost a launch sits (call 4):
# Nsight Compute's speed-of-light, launch, occupancy, scheduler and warp-state sections of v10
# (LG_QWEN_ATTN_V10=2, attn_decode_tc_rows_kernel) and of v8's rows form at 16 sequences of 256
# positions, and of v10 at 64 x 256, one launch each past the first 100 (8B, hand-written).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis"
for v in v10_16:16:LG_QWEN_ATTN_V10=2 v8_16:16:LG_QWEN_ATTN_V10=0 v10_64:64:LG_QWEN_ATTN_V10=2; do
  name=${v%%:*}; rest=${v#*:}; b=${rest%%:*}; env_=${rest#*:}
  env "$env_" timeout 150 $ncu --clock-control none $sections --csv --page details -k regex:attn_decode \
    --launch-skip 100 --launch-count 1 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
    --decode-tokens 12 --batch "$b" --context 256 --kv-tokens 40000 > "$out/ncu_$name.csv" 2>&1
  echo "$name rc $?"
  grep -E '"(Duration|Elapsed Cycles|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Size|Grid Size|Waves Per SM|Warp Cycles Per Issued Instruction|Issue Slots Busy|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler|Avg. Active Threads Per Warp|Dynamic Shared Memory Per Block|Static Shared Memory Per Block|L2 Hit Rate|Mem Busy|Max Bandwidth)"' \
    "$out/ncu_$name.csv" | awk -F'","' '{print $(NF-2) " = " $NF " " $(NF-1)}' | tr -d '"' | head -30
done
exit 0
