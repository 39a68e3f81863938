#!/usr/bin/env bash
# Session 14, call 3: the MoE probes again (fp32 weights keep the exact form; the tensor-core form
# on bf16 wide rows at a 400-token prefill), then where the tensor-core experts pay at the 30B-A3B
# shape: LG_COMPILED_MOE_MMA_T (the fewest tokens of a step that take it) off (100000), 16 and
# the default 64, over prefills of 64-512 tokens and decode steps of 16-64 sequences.
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*:CompiledBatch.TinyQwen3Moe*' \
  > "$out/moe_tests.txt" 2>&1; echo "moe tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|^==|Failure|first stage" "$out/moe_tests.txt" | head -30
grep -E "moe_gate_up|moe_down|l.\.x=add" "$out/moe_tests.txt" | tail -8
shape=bench/shapes/qwen3-30b-a3b
for t in 100000 16 64; do
  LG_COMPILED_MOE_MMA_T=$t timeout 150 $lg bench --shape $shape --lane compiled --prompt-len 64,128,256,512 \
    --batch 16,32,64 --context 512 --kv-tokens 50000 > "$out/bench_t$t.txt" 2>&1; echo "== MMA_T=$t rc $?"
  grep -E "prefill T=|^ +[0-9]+ +512" "$out/bench_t$t.txt"
done
exit 0
