#!/usr/bin/env bash
# Session 16, call 2: issue 13's "compiled lane within 1.3x of the hand-written lane at every
# batch size" after call 1's stacked GEMMs: both lanes, both Qwen3 shapes, B = 1, 16, 64, 128 at
# 128 and 512 positions; then launch profiles of the compiled lane's 128-sequence step.
set -uo pipefail
source bench/device_env.sh
for shape in qwen3-0.6b qwen3-8b; do
  for lane in handwritten compiled; do
    timeout 200 $lg bench --shape $shape --lane $lane --prompt-len 512 --batch 1,16,64,128 --context 128,512 \
      --kv-tokens 90000 > "$out/bench_${shape}_$lane.txt" 2>&1
    echo "== $shape $lane"; grep -E "^ +[0-9]+ +(128|512) |prefill T" "$out/bench_${shape}_$lane.txt"
  done
done
for shape in qwen3-0.6b qwen3-8b; do
  LG_PROFILE_LAUNCHES=1 timeout 150 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 16,128 \
    --context 512 --kv-tokens 90000 > "$out/profile_${shape}_compiled.txt" 2>&1
  grep -A14 "T=128 B=128" "$out/profile_${shape}_compiled.txt" | head -16
done
exit 0
