#!/usr/bin/env bash
# Session 20, call 5: T taken as 1 only past the trap of a kernel with a prologue reduction (call 4
# gave o_proj and down 66 registers and half the blocks); the next-output prefetch is gone.
# Experiment: the split-KV kernel's two alternating half rounds (LG_COMPILED_ATTN_PIPE=1), its
# locks, A/B lines at 512 and at 32,768 positions, and Nsight durations of both lanes' decode
# attention at 32,768 positions.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
LG_COMPILED_ATTN_PIPE=1 timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
  --compare-logits > "$out/locks_compiled_pipe.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_compiled_pipe.txt"
for r in 1 2; do
  step_ms "new" qwen3-8b
  step_ms "pipe" qwen3-8b LG_COMPILED_ATTN_PIPE=1
done
step_ms "new" qwen3-0.6b
step_ms "new" bench/shapes/qwen3-30b-a3b
for r in 1 2; do
  b1_32k new compiled
  b1_32k pipe compiled LG_COMPILED_ATTN_PIPE=1
done
echo "at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in compiled:0 compiled:1 handwritten:0; do
  lane=${v%:*}
  LG_COMPILED_ATTN_PIPE=${v#*:} timeout 100 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum \
    --csv -k regex:att --launch-skip 100 --launch-count 6 $lg bench --shape qwen3-8b --lane $lane --prompt-len 512 \
    --decode-tokens 8 --context 32768 > "$out/ncu_attn_32k_${lane}_${v#*:}.csv" 2>&1
  echo "$v rc $? at ${SECONDS}s"; grep -E "gpu__time_duration" "$out/ncu_attn_32k_${lane}_${v#*:}.csv" | tail -3 | cut -c1-40,150-400
done
exit 0
