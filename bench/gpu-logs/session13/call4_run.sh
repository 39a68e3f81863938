#!/usr/bin/env bash
# Session 13, call 4: decode GEMV kernels whose warps load the first batch of their first
# output's weight rows before the kernel's wait (LG_COMPILED_GEMV_EARLY_LOADS; as the hand-written
# GEMV does), on top of the landed early launch and decode-only kernels. Correctness at the
# defaults, then the knob alternated twice (compiled lane, B = 1 and 16 at 512 positions), and the
# hand-written lane at the dense shapes.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks.txt"
for round in 1 2; do
  for v in 0 1; do
    for shape in bench/shapes/qwen3-30b-a3b qwen3-0.6b qwen3-8b; do
      f="$out/ab.txt"
      echo "== round $round early_loads=$v $(basename $shape)" >> "$f"
      LG_COMPILED_GEMV_EARLY_LOADS=$v timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 \
        --batch 1,16 --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512" >> "$f"
      echo "$round loads=$v $(basename $shape): $(tail -2 "$f" | awk '{printf "B%s %s ms  ", $1, $3}')"
    done
  done
done
for shape in qwen3-0.6b qwen3-8b; do
  timeout 100 $lg bench --shape $shape --lane handwritten --prompt-len 2 --batch 1,16 --context 512 \
    --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512" > "$out/hw_$shape.txt"
  echo "hw $shape: $(awk '{printf "B%s %s ms  ", $1, $3}' "$out/hw_$shape.txt")"
done
exit 0
