#!/usr/bin/env bash
# Session 12, call 4: the final binary (experts read stored activations as float4; an element
# stage's stores of one shape share a loop; the top-k operand read in a loop not unrolled):
# compiled-lane tests, every Qwen lock and the MoE lock on the compiled lane, the 30B-A3B shape at
# B = 1 / 16 / 64 with its launch profile and transformers' Qwen3MoeForCausalLM in the same call,
# and the dense shapes on both lanes (the compiled/hand-written ratio of issue 13).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
{ timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
} > "$out/locks_compiled.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
LG_PROFILE_LAUNCHES=1 timeout 200 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2048 \
  --batch 1,16,64 --context 512 --kv-tokens 70000 > "$out/bench_30b_a3b.txt" 2>&1
grep -E "^ +[0-9]+ +512|prefill|floors" "$out/bench_30b_a3b.txt"
for s in qwen3-0.6b qwen3-8b; do
  for l in compiled handwritten; do
    echo "== $s $l" >> "$out/bench_dense.txt"
    timeout 120 $lg bench --shape $s --lane $l --prompt-len 512 --batch 1,16,64 --context 512 --kv-tokens 40000 \
      >> "$out/bench_dense.txt" 2>&1
  done
done
grep -E "^==|^ +[0-9]+ +512" "$out/bench_dense.txt"
timeout 200 python3 bench/peers/hf_moe_peer.py bench/shapes/qwen3-30b-a3b/config.json 1 16 64 2>&1 | grep -v Warn \
  > "$out/hf_moe.txt"; tail -2 "$out/hf_moe.txt" | cut -c1-600
exit 0
