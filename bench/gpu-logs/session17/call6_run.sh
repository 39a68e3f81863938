#!/usr/bin/env bash
# Session 17, call 6: what limits one sequence's attention at 32,768 positions (8B): Nsight
# Compute on one launch each of the hand-written lane's v8 and the compiled lane's split-KV kernel
# (its first form, the default at one row), in the decode graph (graph nodes profiled one by one).
set -uo pipefail
source bench/device_env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats
  --section Occupancy --section LaunchStats)
timeout 150 $ncu --graph-profiling node --kernel-name regex:attn_decode_long --launch-count 1 "${sections[@]}" \
  $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 2 --context 32768 \
  > "$out/ncu_v8_32k.txt" 2>&1
timeout 150 $ncu --graph-profiling node --kernel-name 'regex:^k[0-9]+_attention$' --launch-skip 40 --launch-count 1 \
  "${sections[@]}" $lg bench --shape qwen3-8b --lane compiled --prompt-len 16 --decode-tokens 2 --context 32768 \
  > "$out/ncu_compiled_32k.txt" 2>&1
for f in "$out"/ncu_*.txt; do
  echo "== $f"
  grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall" "$f" | head -24
done
exit 0
