#!/usr/bin/env bash
# Session 11, call 1: main at 556b89f (v8's batched form removed, rope_args_for) checked on the GPU:
# qwen_lane_tests, the Qwen locks on the hand-written lane (with logits, and in a batch of 16),
# 8B decode steps at B = 1..128, 128 and 512 positions; the split-K lab (cuBLASLt's choice against
# split-K as a strided-batched GEMM into fp32 partials); the MoE routing probe on tiny-qwen3-moe.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests; unpack_xz compiled_lane_tests; unpack_xz gemm_splitk_lab
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
locks=$(qwen_locks_dir)
lock() { timeout 100 $lg lock check --lane handwritten --locks "$locks" --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; grep -c "^ok" "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; grep -c "^ok" "$out/lock_handwritten_batch.txt"
timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 --batch 1,16,64,128 \
  --context 128,512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | tee "$out/bench.txt"
timeout 200 /tmp/gemm_splitk_lab 16,32,64,128 > "$out/gemm_splitk_lab.txt" 2>&1; tail -3 "$out/gemm_splitk_lab.txt"
LG_SHARED_DIR=/tmp/lgshared timeout 120 /tmp/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*:CompiledBatch.TinyQwen3Moe*' \
  > "$out/moe_probe.txt" 2>&1
LG_COMPILED_MOE=1 LG_SHARED_DIR=/tmp/lgshared timeout 120 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledBatch.TinyQwen3Moe*' > "$out/moe_batch.txt" 2>&1
grep -E "^seed|PASSED|FAILED|first" "$out/moe_probe.txt" "$out/moe_batch.txt" | head -20
exit 0
