#!/usr/bin/env bash
# Session 22, call 9: the session's final binary (early moe_down rows, the shared RMSNorm
# prologue, the review's fixes). compiled_lane_tests whole and the compiled lane's locks; the
# steps at 30B-A3B (twice), 8B and 0.6B, 8B at 32,768 positions; then Nsight Compute's detail
# pages of 30B-A3B's decode o_proj (k11_gemm) and q/k/v (k24_gemm) GEMVs in the graph, caches as
# they run: what holds a 17-21 MB GEMV at about 2 TB/s.
set -uo pipefail
source bench/device_env.sh
compiled_checks
step_ms final bench/shapes/qwen3-30b-a3b
step_ms final bench/shapes/qwen3-30b-a3b
step_ms final qwen3-8b
step_ms final qwen3-0.6b
b1_32k final compiled
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 150 $ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section LaunchStats -k 'regex:^k(11|24)_gemm$' --launch-skip 96 \
  --launch-count 2 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 32 \
  --kv-tokens 12000 --decode-tokens 16 > "$out/ncu_gemv_30b.txt" 2>&1
echo "ncu rc $?"
grep -E "k(11|24)_gemm|Duration|DRAM Throughput|L2 Hit Rate|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall Long|Memory Throughput" "$out/ncu_gemv_30b.txt" | head -40
exit 0
