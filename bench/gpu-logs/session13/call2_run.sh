#!/usr/bin/env bash
# Session 13, call 2: the decode GEMVs' weight rows prefetched into L2 before each kernel's wait and
# one round ahead (LG_COMPILED_PREFETCH_MB), every emitted kernel letting the next launch be
# scheduled right after its wait (LG_COMPILED_EARLY_LAUNCH), and the decode GEMV kernels of stages
# with a prefill form emitted without their any-T fallback (LG_COMPILED_GEMV_DECODE_ONLY).
# Correctness at the defaults (all on), then each variant alternated twice, B = 1 and 16 at 512
# positions, compiled lane.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks.txt"
variant() {  # name -> the three knobs
  case $1 in
    off) echo "LG_COMPILED_EARLY_LAUNCH=0 LG_COMPILED_PREFETCH_MB=0 LG_COMPILED_GEMV_DECODE_ONLY=0" ;;
    do) echo "LG_COMPILED_EARLY_LAUNCH=0 LG_COMPILED_PREFETCH_MB=0 LG_COMPILED_GEMV_DECODE_ONLY=1" ;;
    pf) echo "LG_COMPILED_EARLY_LAUNCH=0 LG_COMPILED_PREFETCH_MB=20 LG_COMPILED_GEMV_DECODE_ONLY=1" ;;
    on) echo "LG_COMPILED_EARLY_LAUNCH=1 LG_COMPILED_PREFETCH_MB=20 LG_COMPILED_GEMV_DECODE_ONLY=1" ;;
  esac
}
for round in 1 2; do
  for v in off do pf on; do
    for shape in bench/shapes/qwen3-30b-a3b qwen3-0.6b qwen3-8b; do
      f="$out/ab.txt"
      echo "== round $round $v $(basename $shape)" >> "$f"
      env $(variant $v) timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1,16 \
        --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512" >> "$f"
      echo "$round $v $(basename $shape): $(tail -2 "$f" | awk '{printf "B%s %s ms  ", $1, $3}')"
    done
  done
done
LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 \
  --batch 1 --context 512 --kv-tokens 12000 > "$out/profile_30b_a3b.txt" 2>&1
grep -A12 "T=1 B=1" "$out/profile_30b_a3b.txt" | head -13
exit 0
