#!/usr/bin/env bash
# Session 49, call 1 (any card): session 48's prepared call 8, as it was.
# Build: main after session 48 with session48/call8_one_row.patch and session38/call7_rows_early.patch
# applied (the second for call 2; it changes only the hand-written lane behind its knob); the lab (bench/labs/
# moe_fused_lab.cu, nvcc -O3 -std=c++17 -arch=sm_90) xz'd as .carry/moe_fused_lab.xz; bundle
# LG_BUNDLE_FIXTURES=tiny-qwen3-moe scripts/device_bundle.sh build/src/cli/lg
# build/tests/lanes_compiled/compiled_lane_tests build/tests/lanes_qwen/qwen_lane_tests. The patch adds the one-token experts kernels
# (LaunchPlan::one_row_kernel: each experts launch's T = 1 form alone, 48 registers for gate/up
# where the launch's own kernel, which also holds the grouped form of T > 1, takes 128 and 8 KB of
# shared arrays; LG_COMPILED_MOE_ONE_ROW=0: the launch's own kernel at every step), and the lab of
# call 7 (gate_up held to two blocks an SM, the emitted kernel's occupancy before this change).
# 1. The lab, once. 2. The 30B-A3B one-token step, one-row form against the launch's own kernel,
# alternated, two rounds; the step at 1 and 16 sequences each way. 3. The MoE tests of
# compiled_lane_tests and the MoE lock (with logits; in a batch of 16) with the one-row form on.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
xz -dc .carry/moe_fused_lab.xz > /tmp/moe_fused_lab && chmod +x /tmp/moe_fused_lab
timeout 100 /tmp/moe_fused_lab 48 30 2>&1 | tee "$out/lab.txt" | grep -E "gate_up|emitted|act via L1|bytes of"
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
for r in 1 2; do
  bench_ms "one_row r$r" ab30.txt '1 +512' "$a30"
  bench_ms "own_kernel r$r" ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_ONE_ROW=0
done
step_ms one_row bench/shapes/qwen3-30b-a3b
step_ms own_kernel bench/shapes/qwen3-30b-a3b LG_COMPILED_MOE_ONE_ROW=0
moe_checks
