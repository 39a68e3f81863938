#!/usr/bin/env bash
# Session 21, call 4: the chunk loop's overhead cut (call 3's SASS: 549 instructions a warp's
# iteration, 256 of them the dot products, unpacking and shuffles): key indices and row offsets in
# 32-bit arithmetic, scores in base-2 units with ex2.approx.ftz (LG_COMPILED_ATTN_EXP2=0: __expf).
# Checks at the defaults, A/B lines at 32,768 and 512 positions, Nsight instructions and durations.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
echo "checks done at ${SECONDS}s"
for r in 1 2; do
  b1_32k cur compiled
  b1_32k lazy0 compiled LG_COMPILED_ATTN_LAZY=0
  b1_32k exp2off compiled LG_COMPILED_ATTN_EXP2=0
  b1_32k q4np compiled LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1
  b1_32k q4pipe compiled LG_COMPILED_ATTN_QNE=32
  b1_32k ne16 compiled LG_COMPILED_ATTN_NE=16
done
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
step_ms cur qwen3-8b
step_ms q4np qwen3-8b LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1
step_ms cur qwen3-0.6b
step_ms cur bench/shapes/qwen3-30b-a3b
echo "512 done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "cur:" "q4np:LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1" "ne16:LG_COMPILED_ATTN_NE=16"; do
  IFS=: read -r label envs <<< "$v"
  env $envs timeout 80 $ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv -k 'regex:^k[0-9]+_attention$' --launch-skip 36 --launch-count 2 $lg bench --shape qwen3-8b --lane compiled \
    --prompt-len 512 --decode-tokens 4 --context 32768 > "$out/ncu_attn_32k_$label.csv" 2>&1
  echo "$label rc $? at ${SECONDS}s"
  grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__warps_active.avg.pct_of_peak_sustained_active)"' \
    "$out/ncu_attn_32k_$label.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -3
done
exit 0
