#!/usr/bin/env bash
# Session 14, call 4: the grouped GEMM with its weights by cp.async three stages deep (was: two
# register-staged buffers). Correctness: compiled_lane_tests whole (the new probes: the form on
# bf16 wide rows at a 40-token prefill against the staged executor, and at 400 tokens against the
# grouped CUDA-core form) and the compiled lane's locks; speed at 30B-A3B with the form's threshold
# at 16 and at the default 64, and a launch profile of the 2,048-token prefill.
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
compiled_checks
grep -E "^==|rel " "$out/compiled_lane_tests.txt" | grep -A4 "wide rows: prefill\|launch .* l0.x=moe_gate_up" | head -12
shape=bench/shapes/qwen3-30b-a3b
for t in 16 64; do
  LG_COMPILED_MOE_MMA_T=$t timeout 150 $lg bench --shape $shape --lane compiled --prompt-len 64,128,256,512,2048 \
    --batch 16,32,64 --context 512 --kv-tokens 50000 > "$out/bench_t$t.txt" 2>&1; echo "== MMA_T=$t rc $?"
  grep -E "prefill T=|^ +[0-9]+ +512" "$out/bench_t$t.txt"
done
LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2048 --batch 1 --context 32 \
  --decode-tokens 8 > "$out/profile_2048.txt" 2>&1
grep -A10 "compiled lane T=2048" "$out/profile_2048.txt" | head -11
exit 0
