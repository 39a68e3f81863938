#!/usr/bin/env bash
# Session 23, call 6: how long the 30B-A3B decode topk kernel (k16_topk) and router GEMV (k13_gemm)
# run by themselves: Nsight Compute durations of three decode launches each, the block form and
# the warp form (LG_COMPILED_TOPK_BLOCK=0); caches as they run.
set -uo pipefail
source bench/device_env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for f in 1 0; do
  LG_COMPILED_TOPK_BLOCK=$f timeout 150 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    --csv -k 'regex:^k1[36]_(topk|gemm)$' --launch-skip 200 --launch-count 6 $lg bench --shape bench/shapes/qwen3-30b-a3b \
    --lane compiled --prompt-len 2 --batch 1 --context 32 --kv-tokens 12000 --decode-tokens 8 > "$out/ncu_topk_block$f.csv" 2>&1
  echo "block=$f rc $?"
  grep -E '"gpu__time_duration.sum"' "$out/ncu_topk_block$f.csv" | awk -F'","' '{print $5, $(NF)}'
done
exit 0
