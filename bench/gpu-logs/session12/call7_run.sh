#!/usr/bin/env bash
# Session 12, call 7: the top-k rounds on 64-bit keys (value made order-preserving above the
# index's complement: one max per shuffle step, not the float-and-index comparisons): the MoE
# tests and lock on the compiled lane, and the 30B-A3B step at B = 1 (launch profile) and 16.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 60 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledBatch.*Moe*:CompiledMoeProbe.*' > "$out/compiled_moe_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_moe_tests.txt" | head
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 60 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/lock_compiled_moe.txt"
LG_PROFILE_LAUNCHES=1 timeout 90 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 \
  --batch 1,16 --context 512 --kv-tokens 12000 > "$out/bench_30b_a3b.txt" 2>&1
grep -E "^ +[0-9]+ +512|k15_topk \(grid (1|16) " "$out/bench_30b_a3b.txt"
exit 0
