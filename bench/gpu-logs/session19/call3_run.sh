#!/usr/bin/env bash
# Session 19, call 3: the compiled lane's decode GEMVs with two batches of loads in flight
# (LG_COMPILED_GEMV_PIPE, default on; LG_COMPILED_GEMV_DEPTH loads a batch, default 4), the
# argmax read as float4 and launched with PDL, the L2 prefetch off by default
# (LG_COMPILED_GEMV_PREFETCH=0). Correctness: compiled_lane_tests (the new argmax test; not the
# 85 s long-context one), the compiled locks with logits at the default and at two other shapes of
# the loop. Then the A/B, alternated: one-batch loop (the old code) against the pipelined ones,
# B = 1 and 16 at 512 positions, and one 8B sequence at 32,768 positions.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='-CompiledLane.LongContext*' \
  > "$out/compiled_lane_tests.txt" 2>&1
echo "compiled_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  for knobs in "" "LG_COMPILED_GEMV_PIPE=0 LG_COMPILED_GEMV_DEPTH=8" "LG_COMPILED_GEMV_DEPTH=2 LG_COMPILED_GEMV_PREFETCH=2048"; do
    echo "== [$knobs]"
    env $knobs timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  done
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_compiled.txt" 2>&1
grep -E "^(ok|FAIL|ERROR|==)|locks" "$out/locks_compiled.txt"
echo "checks done at ${SECONDS}s"
old="LG_COMPILED_GEMV_PIPE=0 LG_COMPILED_GEMV_DEPTH=4"
b1() {  # LABEL [ENV=VALUE...]: the 32,768-position line of an 8B batch-1 bench, compiled lane
  local label=$1
  shift
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}
for round in 1 2; do
  for cfg in "old:$old" "pipe4:" "pipe2:LG_COMPILED_GEMV_DEPTH=2" "batch8:LG_COMPILED_GEMV_PIPE=0 LG_COMPILED_GEMV_DEPTH=8" \
             "pipe4pf:LG_COMPILED_GEMV_PREFETCH=2048"; do
    label=${cfg%%:*}; knobs=${cfg#*:}
    for shape in qwen3-8b qwen3-0.6b; do step_ms "r$round $label" $shape $knobs; done
  done
  for cfg in "old:$old" "pipe4:"; do
    label=${cfg%%:*}; knobs=${cfg#*:}
    step_ms "r$round $label" bench/shapes/qwen3-30b-a3b $knobs
    b1 "r$round $label" $knobs
  done
  echo "round $round done at ${SECONDS}s"
done
exit 0
