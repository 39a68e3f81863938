#!/usr/bin/env bash
# Session 20, call 3: the decode GEMVs' RMSNorm prologue computing 8 values a thread before using
# any (LG_COMPILED_PROLOGUE_BATCH; call 2's stall samples put a third of the q/k/v kernel's in its
# one-load-at-a-time staging loop) and the row staged by halves (LG_COMPILED_GEMV_HALVES); the
# next-output prefetch of call 2 is gone. Checks, A/B lines, 32k, then q/k/v and gate/up under
# Nsight Compute again.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
for r in 1 2; do
  step_ms "new" qwen3-8b
  step_ms "pb=16" qwen3-8b LG_COMPILED_PROLOGUE_BATCH=16
  step_ms "pb=4" qwen3-8b LG_COMPILED_PROLOGUE_BATCH=4
  step_ms "pb=0" qwen3-8b LG_COMPILED_PROLOGUE_BATCH=0
  step_ms "old" qwen3-8b LG_COMPILED_PROLOGUE_BATCH=0 LG_COMPILED_GEMV_HALVES=0
done
step_ms "new" qwen3-0.6b
step_ms "old" qwen3-0.6b LG_COMPILED_PROLOGUE_BATCH=0 LG_COMPILED_GEMV_HALVES=0
step_ms "new" bench/shapes/qwen3-30b-a3b
step_ms "old" bench/shapes/qwen3-30b-a3b LG_COMPILED_PROLOGUE_BATCH=0 LG_COMPILED_GEMV_HALVES=0
b1_32k new compiled
b1_32k old compiled LG_COMPILED_PROLOGUE_BATCH=0 LG_COMPILED_GEMV_HALVES=0
b1_32k hw handwritten
echo "at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --set full -k "regex:k1[0256]_gemm" --launch-skip 40 --launch-count 4 -o /tmp/rep \
  $lg bench --shape qwen3-8b --lane compiled --prompt-len 2 --decode-tokens 4 --batch 1 --context 512 > "$out/ncu_run.txt" 2>&1
echo "ncu rc $? at ${SECONDS}s"
$ncu -i /tmp/rep.ncu-rep --page details > "$out/ncu_details.txt" 2>&1
$ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$out/ncu_sass.csv" 2>&1
xz -9 "$out"/ncu_*
exit 0
