#!/usr/bin/env bash
# Session 20, call 4: the prologue's batches now strided by the constant 256 threads (tiling
# K = 4,096 exactly, no bound tests) and T taken as 1 past the decode-only trap (the RMSNorm
# memo test folds away); A/B against the plain loops (LG_COMPILED_PROLOGUE_BATCH=0). Then the
# next-output prefetch again, smaller (2,048 bytes by lane 0's bulk prefetch) and by every
# lane's prefetch.global.L2 (LG_COMPILED_GEMV_NEXT_LINES=1). Checks first; Nsight last.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
for r in 1 2; do
  step_ms "new" qwen3-8b
  step_ms "pb=0" qwen3-8b LG_COMPILED_PROLOGUE_BATCH=0
  step_ms "halves=0" qwen3-8b LG_COMPILED_GEMV_HALVES=0
  step_ms "next=2048" qwen3-8b LG_COMPILED_GEMV_NEXT=2048
  step_ms "next=2048 lines" qwen3-8b LG_COMPILED_GEMV_NEXT=2048 LG_COMPILED_GEMV_NEXT_LINES=1
  step_ms "next=8192 lines" qwen3-8b LG_COMPILED_GEMV_NEXT=8192 LG_COMPILED_GEMV_NEXT_LINES=1
done
for s in qwen3-0.6b bench/shapes/qwen3-30b-a3b; do
  step_ms "new" $s
  step_ms "pb=0" $s LG_COMPILED_PROLOGUE_BATCH=0
  step_ms "next=2048" $s LG_COMPILED_GEMV_NEXT=2048
done
b1_32k new compiled
b1_32k pb=0 compiled LG_COMPILED_PROLOGUE_BATCH=0
b1_32k next=2048 compiled LG_COMPILED_GEMV_NEXT=2048
b1_32k "next=8192 lines" compiled LG_COMPILED_GEMV_NEXT=8192 LG_COMPILED_GEMV_NEXT_LINES=1
echo "at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --set full -k "regex:k1[0256]_gemm" --launch-skip 40 --launch-count 4 -o /tmp/rep \
  $lg bench --shape qwen3-8b --lane compiled --prompt-len 2 --decode-tokens 4 --batch 1 --context 512 > "$out/ncu_run.txt" 2>&1
echo "ncu rc $? at ${SECONDS}s"
$ncu -i /tmp/rep.ncu-rep --page details > "$out/ncu_details.txt" 2>&1
$ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$out/ncu_sass.csv" 2>&1
xz -9 "$out"/ncu_*
exit 0
