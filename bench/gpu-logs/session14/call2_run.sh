#!/usr/bin/env bash
# Session 14, call 2: the experts' tensor-core form (src/kernels/grouped_gemm.cuh, emitted by
# src/emit/cuda/experts_prefill.cpp). Correctness: the MoE probes (stage by stage against the
# staged executor, the form forced at T >= 2) and the MoE lock with the form forced; then speed at
# the 30B-A3B shape: prefill 512 / 2048 and decode B = 1, 16, 64 at 512 positions, the form on
# (default: T >= 64) and off (LG_COMPILED_MOE_MMA=0), and a launch profile of the form.
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*:CompiledBatch.TinyQwen3Moe*' \
  > "$out/moe_tests.txt" 2>&1; echo "moe tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|^==|Failure|first stage" "$out/moe_tests.txt" | head -30
{ LG_COMPILED_MOE_MMA_T=2 timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
} > "$out/moe_lock.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks|rel" "$out/moe_lock.txt" | head
shape=bench/shapes/qwen3-30b-a3b
LG_PROFILE_LAUNCHES=1 timeout 170 $lg bench --shape $shape --lane compiled --prompt-len 512,2048 --batch 1,16,64 \
  --context 512 --kv-tokens 40000 > "$out/bench_mma.txt" 2>&1; echo "bench mma rc $?"
grep -vE "^\s+k[0-9]+|^compiled lane T=" "$out/bench_mma.txt" | tail -25
grep -A12 "compiled lane T=2048" "$out/bench_mma.txt" | head -14
LG_COMPILED_MOE_MMA=0 timeout 150 $lg bench --shape $shape --lane compiled --prompt-len 512,2048 --batch 1,16,64 \
  --context 512 --kv-tokens 40000 > "$out/bench_nomma.txt" 2>&1; echo "bench no-mma rc $?"
tail -14 "$out/bench_nomma.txt"
exit 0
