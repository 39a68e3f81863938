#!/usr/bin/env bash
# Session 21, call 1: the compiled split-KV attention's chunk loop (attention.cpp, key_loop): the
# queries formed once a block into shared memory (LG_COMPILED_ATTN_STAGE_Q), the rescale only when
# a round raises the max (LG_COMPILED_ATTN_LAZY; bit-identical), and the 4-head form at one row
# (LG_COMPILED_ATTN_QNE=32) with the next iteration's loads in flight (LG_COMPILED_ATTN_PIPE, on by
# default there). Checks, then A/B lines at 32,768 and 512 positions, then Nsight durations of the
# decode attention at 32,768 positions on both lanes.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
LG_COMPILED_ATTN_QNE=32 timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
  --compare-logits > "$out/locks_compiled_q4.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_compiled_q4.txt"
echo "checks done at ${SECONDS}s"
old="LG_COMPILED_ATTN_LAZY=0 LG_COMPILED_ATTN_STAGE_Q=0"
for r in 1 2; do
  b1_32k new compiled
  b1_32k old compiled $old
  b1_32k q4 compiled LG_COMPILED_ATTN_QNE=32
  b1_32k q4nopipe compiled LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_PIPE=1
done
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
step_ms new qwen3-8b
step_ms old qwen3-8b $old
step_ms q4 qwen3-8b LG_COMPILED_ATTN_QNE=32
step_ms new qwen3-0.6b
step_ms old qwen3-0.6b $old
echo "512 done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "compiled:new:" "compiled:old:$old" "compiled:q4:LG_COMPILED_ATTN_QNE=32" "handwritten:hw:"; do
  IFS=: read -r lane label envs <<< "$v"
  k='regex:^k[0-9]+_attention$'; [ "$lane" = handwritten ] && k='regex:attn_decode'
  env $envs timeout 80 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
    --csv -k "$k" --launch-skip 36 --launch-count 6 $lg bench --shape qwen3-8b --lane $lane --prompt-len 512 \
    --decode-tokens 4 --context 32768 > "$out/ncu_attn_32k_$label.csv" 2>&1
  echo "$label rc $? at ${SECONDS}s"
  grep -E '"(gpu__time_duration.sum|dram__bytes_read.sum|smsp__inst_executed.sum)"' "$out/ncu_attn_32k_$label.csv" \
    | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -6
done
exit 0
