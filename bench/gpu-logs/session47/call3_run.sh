#!/usr/bin/env bash
# Session 47, call 3 (any card; prepared, not run: the session's device time ran out in starts that
# found no machine). Build: branch s47 with call3_trigger_first.patch and call2_topk_probe.patch
# applied. Call 2 put 6 of the top-k's 8 us a layer in the launch itself,
# not its ranking. call3_trigger_first.patch: the top-k kernel triggers its dependents before its
# wait (the experts' launch is scheduled while it waits, not after the router completes);
# LG_COMPILED_TOPK_TRIGGER_FIRST=0 is the form before. The 30B-A3B one-token step, alternated, two
# rounds; the step at 1 and 16 sequences each way; then the MoE tests of compiled_lane_tests and
# the MoE lock on the compiled lane (with logits, and in a batch of 16).
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
for r in 1 2; do
  bench_ms "trigger_first r$r" ab30.txt '1 +512' "$a30"
  bench_ms "after_wait r$r" ab30.txt '1 +512' "$a30" LG_COMPILED_TOPK_TRIGGER_FIRST=0
done
# Call 2's launch without ranking, each way, and the step without the launch: if triggering
# first is what the launch cost, chain_first comes down to skip_topk.
bench_ms "chain_first" ab30.txt '1 +512' "$a30" LG_COMPILED_TOPK_PROBE=chain
bench_ms "chain_after" ab30.txt '1 +512' "$a30" LG_COMPILED_TOPK_PROBE=chain LG_COMPILED_TOPK_TRIGGER_FIRST=0
bench_ms "skip_topk" ab30.txt '1 +512' "$a30" 'LG_COMPILED_SKIP=_topk$'
step_ms trigger_first bench/shapes/qwen3-30b-a3b
step_ms after_wait bench/shapes/qwen3-30b-a3b LG_COMPILED_TOPK_TRIGGER_FIRST=0
LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='*Moe*' > "$out/compiled_moe_tests.txt" 2>&1
echo "compiled_lane_tests *Moe* rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_moe_tests.txt" | head
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_moe.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|logits" "$out/locks_moe.txt"
