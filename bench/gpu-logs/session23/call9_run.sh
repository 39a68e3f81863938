#!/usr/bin/env bash
# Session 23, call 9: the warp top-k's rounds as two 32-bit redux.sync warp maxima (the key's high
# word, then its low word among the lanes holding it) instead of five 64-bit shuffle steps
# (LG_COMPILED_TOPK_REDUX=0: the shuffles, main's kernel text). compiled_lane_tests (all but the 85 s
# long-context test) and the compiled locks; memcheck of the MoE probes; the 30B-A3B step, redux
# and shuffles alternated three times; the topk kernel's Nsight duration; 8B and 0.6B once (no topk).
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
moe_memcheck
for round in 1 2 3; do
  step_ms redux bench/shapes/qwen3-30b-a3b
  step_ms shuffles bench/shapes/qwen3-30b-a3b LG_COMPILED_TOPK_REDUX=0
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for r in 1 0; do
  LG_COMPILED_TOPK_REDUX=$r timeout 150 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    -k 'regex:^k16_topk$' --launch-skip 100 --launch-count 4 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled \
    --prompt-len 2 --batch 1 --context 32 --kv-tokens 12000 --decode-tokens 8 > "$out/ncu_topk_redux$r.csv" 2>&1
  echo "redux=$r ncu rc $?"; grep -E '"gpu__time_duration.sum"' "$out/ncu_topk_redux$r.csv" | awk -F'","' '{print $5, $(NF)}'
done
step_ms redux qwen3-8b
step_ms redux qwen3-0.6b
exit 0
