#!/usr/bin/env bash
# Session 21, call 6: more warps an SM for the split-KV loop. With the queries read from shared
# memory at each use (LG_COMPILED_ATTN_QSMEM=2) the 2-head form takes 92 registers, 80 under
# __launch_bounds__(256, 3) (LG_COMPILED_ATTN_MINB=3, no spill) and 64 under 4 (80 bytes spilled);
# the runner fills them with LG_COMPILED_ATTN_BPS. Locks for the 3-block form, A/B lines at 32,768
# and 512 positions, Nsight durations.
set -uo pipefail
source bench/device_env.sh
qs3="LG_COMPILED_ATTN_QSMEM=2 LG_COMPILED_ATTN_MINB=3 LG_COMPILED_ATTN_BPS=3"
env $qs3 timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
  --compare-logits > "$out/locks_compiled_qs3.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_compiled_qs3.txt"
echo "locks done at ${SECONDS}s"
for r in 1 2; do
  b1_32k cur compiled
  b1_32k qs2 compiled LG_COMPILED_ATTN_QSMEM=2
  b1_32k qs3 compiled $qs3
  b1_32k qs3r3 compiled $qs3 LG_COMPILED_ATTN_R=3
  b1_32k qs4 compiled LG_COMPILED_ATTN_QSMEM=2 LG_COMPILED_ATTN_MINB=4 LG_COMPILED_ATTN_BPS=4
done
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
step_ms cur qwen3-8b
step_ms qs3 qwen3-8b $qs3
step_ms cur qwen3-0.6b
step_ms qs3 qwen3-0.6b $qs3
echo "512 done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "cur:" "qs3:$qs3"; do
  IFS=: read -r label envs <<< "$v"
  env $envs timeout 80 $ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv -k 'regex:^k[0-9]+_attention$' --launch-skip 36 --launch-count 2 $lg bench --shape qwen3-8b --lane compiled \
    --prompt-len 512 --decode-tokens 4 --context 32768 > "$out/ncu_attn_32k_$label.csv" 2>&1
  echo "$label rc $? at ${SECONDS}s"
  grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__warps_active.avg.pct_of_peak_sustained_active)"' \
    "$out/ncu_attn_32k_$label.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -3
done
exit 0
