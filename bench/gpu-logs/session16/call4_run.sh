#!/usr/bin/env bash
# Session 16, call 4: the landed defaults (stacked GEMMs, epilogue-written operand, block-wide
# norm packs, 4 query heads a block in the split-KV attention from a bf16 cache): correctness on
# the compiled lane, then both lanes at B = 1, 16, 64, 128 and 128 / 512 positions, both Qwen3
# shapes, and the 30B-A3B shape (G = 8: 4 heads a block now) at B = 1, 16.
set -uo pipefail
source bench/device_env.sh
compiled_checks
for shape in qwen3-0.6b qwen3-8b; do
  for lane in handwritten compiled; do
    timeout 200 $lg bench --shape $shape --lane $lane --prompt-len 512 --batch 1,16,64,128 --context 128,512 \
      --kv-tokens 90000 > "$out/bench_${shape}_$lane.txt" 2>&1
    echo "== $shape $lane"; grep -E "^ +[0-9]+ +(128|512) |prefill T" "$out/bench_${shape}_$lane.txt"
  done
done
timeout 150 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 512 --batch 1,16 --context 512 \
  --kv-tokens 12000 > "$out/bench_30b_a3b.txt" 2>&1
echo "== 30b-a3b compiled"; grep -E "^ +[0-9]+ +512 |prefill T" "$out/bench_30b_a3b.txt"
exit 0
