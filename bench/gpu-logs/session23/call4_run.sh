#!/usr/bin/env bash
# Session 23, call 4: why the folded topk (call 3) made the 30B-A3B step slower at B = 1 and 16:
# the launch profile (LG_PROFILE_LAUNCHES=1: an eager step with events between launches, per
# kernel) folded and not, at B = 1 and B = 16.
set -uo pipefail
source bench/device_env.sh
for b in 1 16; do
  for f in 1 0; do
    LG_PROFILE_LAUNCHES=1 LG_COMPILED_FOLD_TOPK=$f timeout 100 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled \
      --prompt-len 2 --batch $b --context 512 --kv-tokens 12000 > "$out/profile_b${b}_fold$f.txt" 2>&1
    echo "B=$b fold=$f rc $?"
    grep -E "^ +[0-9]+ +512" "$out/profile_b${b}_fold$f.txt"
  done
done
exit 0
