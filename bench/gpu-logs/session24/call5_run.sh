#!/usr/bin/env bash
# Session 24, call 5: Nsight Compute on the 8B step of 16 sequences at 512 positions: v8's rows
# form (the plan) against v10 (LG_QWEN_ATTN_V10=1), two launches each past the first layers.
set -uo pipefail
source bench/device_env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in rows v10; do
  case $v in rows) e=(); k='regex:attn_decode_long' ;; v10) e=(LG_QWEN_ATTN_V10=1); k='regex:attn_decode_tc_rows' ;; esac
  env "${e[@]}" timeout 200 $ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
    --metrics smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warp_latency_issue_stalled_math_pipe_throttle,smsp__average_warp_latency_issue_stalled_short_scoreboard,smsp__inst_executed.sum,smsp__cycles_active.avg \
    -k "$k" --launch-skip 36 --launch-count 2 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
    --decode-tokens 4 --batch 16 --context 512 --kv-tokens 20000 > "$out/ncu_$v.txt" 2>&1
  echo "== $v rc $?"
  grep -E "Duration|DRAM Throughput|Registers Per|Grid Size|Block Size|Issued Warp|Eligible Warps|Active Warps Per|Warp Cycles Per Issued|stalled|inst_executed|cycles_active|Achieved Occ" "$out/ncu_$v.txt" | head -40
done
exit 0
