#!/usr/bin/env bash
# Session 20, call 1: branch storedview (o_proj reads the attention's stored output in place,
# LG_COMPILED_ROW_VIEWS) checked and timed with the knob on and off; then Nsight Compute's full
# section set on one instance of each compiled 8B decode GEMV (q/k/v k16, o_proj k10, down k15,
# gate/up k12) and of the hand-written lane's q/k/v and o_proj GEMVs, to see why the compiled
# q/k/v GEMV streams at 1.8 TB/s where the hand-written one reaches 2.6.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
for r in 1 2; do
  for v in 1 0; do step_ms "views=$v" qwen3-8b LG_COMPILED_ROW_VIEWS=$v; done
done
for v in 1 0; do step_ms "views=$v" qwen3-0.6b LG_COMPILED_ROW_VIEWS=$v; done
for v in 1 0; do b1_32k "views=$v" compiled LG_COMPILED_ROW_VIEWS=$v; done
echo "at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --set full -k "regex:k1[0256]_gemm" --launch-skip 40 --launch-count 4 \
  $lg bench --shape qwen3-8b --lane compiled --prompt-len 2 --decode-tokens 4 --batch 1 --context 512 \
  > "$out/ncu_full_compiled.txt" 2>&1
echo "ncu compiled rc $? at ${SECONDS}s"
timeout 200 $ncu --clock-control none --set full --kernel-name-base demangled -k "regex:gemv_kernel" --launch-skip 40 --launch-count 4 \
  $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --decode-tokens 4 --batch 1 --context 512 \
  > "$out/ncu_full_handwritten.txt" 2>&1
echo "ncu handwritten rc $? at ${SECONDS}s"
xz -9 "$out"/ncu_full_*.txt
exit 0
