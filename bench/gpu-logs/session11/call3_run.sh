#!/usr/bin/env bash
# Session 11, call 3: the split-K RMSNorm with every slice's loads in flight at once (call 2's
# summed one slice after another and gained nothing at 8B); the MoE batch test held to the fp32
# reference up to each sequence's first router near tie; the 30B-A3B decode with the expert
# stages on by default.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests; unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
locks=$(qwen_locks_dir)
lock() { timeout 100 $lg lock check --lane handwritten --locks "$locks" --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; grep -c "^ok" "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; grep -c "^ok" "$out/lock_handwritten_batch.txt"
for round in 1 2; do
  for sk in 1 0; do
    for shape in qwen3-8b qwen3-0.6b; do
      LG_QWEN_SPLITK=$sk timeout 120 $lg bench --shape $shape --lane handwritten --prompt-len 512 --decode-tokens 32 \
        --batch 16,64,128 --context 128,512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | sed "s/^/$shape splitk=$sk /" \
        | tee -a "$out/bench.txt"
    done
  done
done
LG_SHARED_DIR=/tmp/lgshared timeout 120 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledBatch.*Moe*:CompiledMoeProbe.*' > "$out/compiled_moe_tests.txt" 2>&1
grep -E "^seed|PASSED|FAILED|tiny-qwen3-moe" "$out/compiled_moe_tests.txt" | head -20
timeout 200 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --batch 1,16,64 --context 512 \
  > "$out/bench_30b_a3b.txt" 2>&1; tail -8 "$out/bench_30b_a3b.txt"
exit 0
