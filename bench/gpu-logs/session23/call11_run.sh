#!/usr/bin/env bash
# Session 23, call 11: Nsight Compute's detail of the hand-written lane's batched decode attention
# (rows form, attn_decode_long_kernel) in the 8B step of 16 sequences at 512 positions, which call
# 10 put at 20 us a layer against 7.9 us of K/V at the copy rate: what holds it.
set -uo pipefail
source bench/device_env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section Occupancy --section LaunchStats --section SchedulerStats -k 'regex:attn_decode_long' --launch-skip 36 \
  --launch-count 2 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 4 --batch 16 \
  --context 512 --kv-tokens 20000 > "$out/ncu_attn_b16.txt" 2>&1
echo "ncu rc $?"
grep -E "attn_decode_long|Duration|DRAM Throughput|L2 Hit Rate|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|Memory Throughput|Grid Size|Block Size|No Eligible|Theoretical Occ|Waves Per SM|Stall" "$out/ncu_attn_b16.txt" | head -50
exit 0
