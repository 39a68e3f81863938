#!/usr/bin/env bash
# Session 13, call 6: split-K decode GEMVs for stages with few outputs (several warps an output,
# LG_COMPILED_GEMV_SPLIT; =0 off, =8 forces up to 8 on the 22M model's short rows). Correctness at
# the defaults and forced to 8, the hand-written locks three times over (call 5 saw one failure
# there), then split on / off alternated twice (compiled lane, B = 1 and 16 at 512 positions).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  echo "== LG_COMPILED_GEMV_SPLIT=8"
  LG_COMPILED_GEMV_SPLIT=8 timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
    --compare-logits
  for i in 1 2 3; do
    echo "== hand-written, run $i"
    timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  done
} > "$out/locks.txt" 2>&1; grep -E "^(ok|FAIL|ERROR|==)|locks" "$out/locks.txt"
for round in 1 2; do
  for v in 1 0; do
    for shape in qwen3-0.6b bench/shapes/qwen3-30b-a3b qwen3-8b; do
      knob=$([ $v = 0 ] && echo 0 || echo "")
      r=$(LG_COMPILED_GEMV_SPLIT=$knob timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 \
        --batch 1,16 --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512")
      echo "== round $round split $v $(basename $shape)" >> "$out/ab.txt"; echo "$r" >> "$out/ab.txt"
      echo "$round split=$v $(basename $shape): $(echo "$r" | awk '{printf "B%s %s ms  ", $1, $3}')"
    done
  done
done
exit 0
