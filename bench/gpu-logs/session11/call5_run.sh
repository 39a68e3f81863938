#!/usr/bin/env bash
# Session 11, call 5: the top-k stage ranks each router row once (its ArgTopK lambda reads the
# TopK lambda's memo; it ran the warp arg-max twice): the MoE tests, the MoE lock on the compiled
# lane, and the 30B-A3B decode with the launch profile.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledBatch.*Moe*:CompiledMoeProbe.*' > "$out/compiled_moe_tests.txt" 2>&1
grep -E "PASSED|FAILED|Failure|first stage" "$out/compiled_moe_tests.txt" | head -10
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; tail -2 "$out/lock_compiled_moe.txt"
LG_PROFILE_LAUNCHES=1 timeout 200 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --batch 1,16 \
  --context 512 > "$out/bench_30b_a3b.txt" 2>&1
grep -E "^ +[0-9]+ +512|floors|prefill|topk|experts \(grid (768|256) " "$out/bench_30b_a3b.txt" | head -20
exit 0
