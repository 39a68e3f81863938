#!/usr/bin/env bash
# Session 13, call 3: which of call 2's pieces pay. Variants alternated twice (compiled lane, B = 1
# and 16 at 512 positions): do = decode-only GEMV kernels alone; el = plus launch_dependents after
# each wait; fw = plus the L2 prefetch of each warp's first rows before the wait; on = plus the
# prefetch one round ahead in the loop. And the hand-written lane at the dense shapes for the ratio.
set -uo pipefail
source bench/device_env.sh
variant() {
  case $1 in
    do) echo "LG_COMPILED_EARLY_LAUNCH=0 LG_COMPILED_PREFETCH_MB=0" ;;
    el) echo "LG_COMPILED_EARLY_LAUNCH=1 LG_COMPILED_PREFETCH_MB=0" ;;
    fw) echo "LG_COMPILED_EARLY_LAUNCH=1 LG_COMPILED_PREFETCH_MB=20 LG_COMPILED_PREFETCH_AHEAD=0" ;;
    on) echo "LG_COMPILED_EARLY_LAUNCH=1 LG_COMPILED_PREFETCH_MB=20 LG_COMPILED_PREFETCH_AHEAD=1" ;;
  esac
}
for round in 1 2; do
  for v in do el fw on; do
    for shape in bench/shapes/qwen3-30b-a3b qwen3-0.6b qwen3-8b; do
      f="$out/ab.txt"
      echo "== round $round $v $(basename $shape)" >> "$f"
      env $(variant $v) timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1,16 \
        --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512" >> "$f"
      echo "$round $v $(basename $shape): $(tail -2 "$f" | awk '{printf "B%s %s ms  ", $1, $3}')"
    done
  done
done
for shape in qwen3-0.6b qwen3-8b; do
  timeout 100 $lg bench --shape $shape --lane handwritten --prompt-len 2 --batch 1,16 --context 512 \
    --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512" > "$out/hw_$shape.txt"
  echo "hw $shape: $(awk '{printf "B%s %s ms  ", $1, $3}' "$out/hw_$shape.txt")"
done
exit 0
