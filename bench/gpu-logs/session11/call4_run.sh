#!/usr/bin/env bash
# Session 11, call 4: the experts kernels' one-token form with whole weight rows loaded into
# registers before the dot products (every load of a warp in flight at once): the MoE tests
# (with a new probe at a shape whose rows take that form) and the 30B-A3B decode with the
# launch profile; lg bench's floor now counts the union of a batch's routed experts. The final
# binary's qwen_lane_tests, Qwen locks and 8B batched steps.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests; unpack_xz qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
locks=$(qwen_locks_dir)
lock() { timeout 100 $lg lock check --lane handwritten --locks "$locks" --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; grep -c "^ok" "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; grep -c "^ok" "$out/lock_handwritten_batch.txt"
timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 --batch 1,16,64,128 \
  --context 128,512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | tee "$out/bench.txt"
LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledBatch.*Moe*:CompiledMoeProbe.*' > "$out/compiled_moe_tests.txt" 2>&1
grep -E "^seed|PASSED|FAILED|tiny-qwen3-moe|Failure|first stage" "$out/compiled_moe_tests.txt" | head -20
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; tail -2 "$out/lock_compiled_moe.txt"
LG_PROFILE_LAUNCHES=1 timeout 240 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --batch 1,16,64 \
  --context 512 > "$out/bench_30b_a3b.txt" 2>&1; grep -E "^ +[0-9]+ +512|floors|prefill" "$out/bench_30b_a3b.txt"
exit 0
