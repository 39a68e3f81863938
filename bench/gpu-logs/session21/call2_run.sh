#!/usr/bin/env bash
# Session 21, call 2: the split-KV chunk loop with 16 elements a lane (LG_COMPILED_ATTN_NE=16: two
# 16-byte loads a K/V row, 8 lanes a key, every query head of the group in one block, the queries
# read from shared memory 4 at a time), R = 2 or 1 rounds; against call 1's forms. Checks with
# NE=16, A/B lines at 32,768 and 512 positions, Nsight durations and instructions.
set -uo pipefail
source bench/device_env.sh
LG_COMPILED_ATTN_NE=16 compiled_checks '-CompiledLane.LongContext*'
echo "checks done at ${SECONDS}s"
for r in 1 2; do
  b1_32k new compiled
  b1_32k ne16 compiled LG_COMPILED_ATTN_NE=16
  b1_32k ne16r1 compiled LG_COMPILED_ATTN_NE=16 LG_COMPILED_ATTN_R=1
  b1_32k ne16lazy0 compiled LG_COMPILED_ATTN_NE=16 LG_COMPILED_ATTN_LAZY=0
  b1_32k q4np compiled LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1
  b1_32k lazy0 compiled LG_COMPILED_ATTN_LAZY=0
done
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
step_ms new qwen3-8b
step_ms ne16 qwen3-8b LG_COMPILED_ATTN_NE=16
step_ms new qwen3-0.6b
step_ms ne16 qwen3-0.6b LG_COMPILED_ATTN_NE=16
echo "512 done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "ne16:LG_COMPILED_ATTN_NE=16" "ne16lazy0:LG_COMPILED_ATTN_NE=16 LG_COMPILED_ATTN_LAZY=0" "ne16r1:LG_COMPILED_ATTN_NE=16 LG_COMPILED_ATTN_R=1"; do
  IFS=: read -r label envs <<< "$v"
  env $envs timeout 80 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
    --csv -k 'regex:^k[0-9]+_attention$' --launch-skip 36 --launch-count 2 $lg bench --shape qwen3-8b --lane compiled \
    --prompt-len 512 --decode-tokens 4 --context 32768 > "$out/ncu_attn_32k_$label.csv" 2>&1
  echo "$label rc $? at ${SECONDS}s"
  grep -E '"(gpu__time_duration.sum|dram__bytes_read.sum|smsp__inst_executed.sum)"' "$out/ncu_attn_32k_$label.csv" \
    | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -6
done
exit 0
