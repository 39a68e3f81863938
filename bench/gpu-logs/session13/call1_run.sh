#!/usr/bin/env bash
# Session 13, call 1: the last session's refactors that only a GPU runs (the MoE probes'
# probe_steps, the compiled lane's weights.cpp, the hand-written lane's designated-initializer GEMV
# arguments): compiled_lane_tests, every Qwen lock on both lanes, the MoE lock on the compiled lane;
# the 30B-A3B step at B = 1 / 16 and the 8B hand-written step; then the grouped tensor-core experts
# lab (bench/labs/moe_grouped_mma_lab.cu, built here with nvcc -O3 -std=c++17 -arch=sm_90).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
unpack_xz moe_grouped_mma_lab
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  for lane in compiled handwritten; do
    timeout 150 $lg lock check --lane $lane --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  done
  timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks.txt"
timeout 120 /tmp/moe_grouped_mma_lab 16,64,512,2048 > "$out/moe_grouped_mma_lab.txt" 2>&1
echo "lab rc $?"; cat "$out/moe_grouped_mma_lab.txt" | tail -30
LG_PROFILE_LAUNCHES=1 timeout 120 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 \
  --batch 1,16 --context 512 --kv-tokens 12000 > "$out/bench_30b_a3b.txt" 2>&1
grep -E "^ +[0-9]+ +512" "$out/bench_30b_a3b.txt"
timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 128 --batch 1,16,64 --context 128,512 \
  --kv-tokens 40000 > "$out/bench_8b_hw.txt" 2>&1; grep -E "^ +[0-9]+ +(128|512)" "$out/bench_8b_hw.txt"
exit 0
