#!/usr/bin/env bash
# Session 20, call 2: the decode GEMVs' next-output L2 prefetch (LG_COMPILED_GEMV_NEXT) and the
# RMSNorm prologue's row staged by halves (LG_COMPILED_GEMV_HALVES), on top of storedview: checks,
# then A/B lines (each knob off, both off, and the grid at 1 and 2 blocks an SM), one sequence at
# 32,768 positions, and Nsight Compute's per-instruction stall samples of q/k/v (k16) and
# gate/up (k12).
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
for r in 1 2; do
  step_ms "new" qwen3-8b
  step_ms "next=0" qwen3-8b LG_COMPILED_GEMV_NEXT=0
  step_ms "halves=0" qwen3-8b LG_COMPILED_GEMV_HALVES=0
  step_ms "old" qwen3-8b LG_COMPILED_GEMV_NEXT=0 LG_COMPILED_GEMV_HALVES=0
  step_ms "bps=1" qwen3-8b LG_COMPILED_GEMV_BPS=1
  step_ms "bps=2" qwen3-8b LG_COMPILED_GEMV_BPS=2
done
step_ms "new" qwen3-0.6b
step_ms "old" qwen3-0.6b LG_COMPILED_GEMV_NEXT=0 LG_COMPILED_GEMV_HALVES=0
b1_32k new compiled
b1_32k old compiled LG_COMPILED_GEMV_NEXT=0 LG_COMPILED_GEMV_HALVES=0
echo "at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --set full -k "regex:k1[256]_gemm" --launch-skip 30 --launch-count 3 -o /tmp/rep \
  $lg bench --shape qwen3-8b --lane compiled --prompt-len 2 --decode-tokens 4 --batch 1 --context 512 > "$out/ncu_run.txt" 2>&1
echo "ncu rc $? at ${SECONDS}s"
$ncu -i /tmp/rep.ncu-rep --page details > "$out/ncu_details.txt" 2>&1
$ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$out/ncu_sass.csv" 2>&1
echo "sass rc $? $(wc -l < "$out/ncu_sass.csv") lines"
xz -9 "$out"/ncu_*
exit 0
