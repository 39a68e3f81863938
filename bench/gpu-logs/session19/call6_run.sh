#!/usr/bin/env bash
# Session 19, call 6: the decode GEMM stages' prologue loops (the RMSNorm's sum, the staging of
# the row) unrolled by 16 (LG_COMPILED_PROLOGUE_UNROLL, 0 = the old 4 / none), with q/k/v apart
# (LG_COMPILED_GEMV_SHARE=0, call 4's form) and shared (call 5's, 1.2% slower at 8B with the old
# prologue). Correctness at the code's default (unroll 16, shared): the 22M compiled lane tests
# and the Qwen and MoE locks with logits. Speed: 8B B = 1 twice, 0.6B and 30B-A3B once, 32k once.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared timeout 100 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledLane.Pycode*:CompiledBatch.Pycode*:CompiledBatch.TinyQwen3Moe*:CompiledDeviceOps.*' \
  > "$out/compiled_lane_tests.txt" 2>&1
echo "compiled_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
} > "$out/locks_compiled.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
echo "checks done at ${SECONDS}s"
cfgs=("A:LG_COMPILED_PROLOGUE_UNROLL=0 LG_COMPILED_GEMV_SHARE=0" "B:LG_COMPILED_GEMV_SHARE=0" "C:")
for round in 1 2; do
  for cfg in "${cfgs[@]}"; do
    label=${cfg%%:*}; knobs=${cfg#*:}
    step_ms "r$round $label" qwen3-8b $knobs
    if [ $round = 1 ]; then
      step_ms "r$round $label" qwen3-0.6b $knobs
      step_ms "r$round $label" bench/shapes/qwen3-30b-a3b $knobs
    fi
  done
done
for cfg in "${cfgs[@]}"; do
  label=${cfg%%:*}; knobs=${cfg#*:}
  [ $SECONDS -lt 200 ] || break
  r=$(env $knobs timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$knobs]: $r" | tee -a "$out/b1_32k.txt"
done
echo "done at ${SECONDS}s"
exit 0
