#!/usr/bin/env bash
# Session 44, call 8 (any card; call 7's build): the batched decode attention at 128 sequences,
# which call 5's serving trace puts at about half of its decode-only steps (~16 GB of K/V a step
# beside 16.4 GB of weights). v9 (`attn_decode_gqa_tc_kernel`, one block per (KV head, sequence)
# at one split, 2 blocks an SM) took 117 us a layer at 512 positions on the H100 (76% of the copy
# rate). Knobs, two rounds: v9 at 2 and 4 splits (LG_QWEN_ATTN_TC=2 with the blocks-per-SM target
# 16 / 32), and in 2-warp blocks (LG_QWEN_ATTN_TC_WARPS=2, five an SM), at 512-2,048 positions;
# then Nsight Compute's sections of one v9 launch at 1,024 positions (what bounds it).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
ab_rounds ab_attn128.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 16 --batch 128 \
--context 512,1024,2048 --kv-tokens 300000" default: split2:LG_QWEN_ATTN_TC=2,LG_QWEN_GQA_BLOCKS_PER_SM=16 \
  split4:LG_QWEN_ATTN_TC=2,LG_QWEN_GQA_BLOCKS_PER_SM=32 w2:LG_QWEN_ATTN_TC_WARPS=2
echo "a/b done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 150 $ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section LaunchStats -k regex:attn_decode_gqa_tc --launch-skip 40 --launch-count 1 \
  $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 4 --batch 128 --context 1024 \
  --kv-tokens 150000 > "$out/ncu_v9_128x1024.txt" 2>&1
echo "ncu rc $?"
grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Registers Per|Shared Memory Config|Dynamic Shared" \
  "$out/ncu_v9_128x1024.txt" | head -30
echo "done at ${SECONDS}s"
exit 0
