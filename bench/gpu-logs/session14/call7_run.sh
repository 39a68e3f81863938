#!/usr/bin/env bash
# Session 14, call 7: the experts stages at T = 1 with a warp per (output, weight row)
# (LG_COMPILED_MOE_ROW_WARPS: default both stages, =down only down, =0 neither). Correctness: the
# MoE probes and the MoE lock on the compiled lane; speed: the 30B-A3B one-token step, one run
# each (the device time left allowed no more).
set -uo pipefail
source bench/device_env.sh
[ -x "$lg" ] || { echo "no lg in the bundle"; exit 1; }
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 120 /tmp/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*:CompiledBatch.TinyQwen3Moe*' \
  > "$out/moe_tests.txt" 2>&1; echo "moe tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|first stage" "$out/moe_tests.txt" | head -12
timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits \
  > "$out/moe_lock.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|rel" "$out/moe_lock.txt" | head -4
shape=bench/shapes/qwen3-30b-a3b
for round in 1; do
  for v in both 0; do
    [ $round = 2 ] && [ $v = down ] && continue
    knob=$([ $v = both ] && echo "" || echo $v)
    r=$(LG_COMPILED_MOE_ROW_WARPS=$knob timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 \
      --batch 1 --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512")
    { echo "== round $round row_warps=$v"; echo "$r"; } >> "$out/ab.txt"
    echo "$round row_warps=$v: $(echo "$r" | awk '{printf "B%s %s ms  ", $1, $3}')"
  done
done
exit 0
# Run after it in the same warm machine (call 7b), one line:
#   for v in down 0 up down 0; do LG_COMPILED_MOE_ROW_WARPS=$v lg bench --shape bench/shapes/qwen3-30b-a3b \
#     --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000; done
