#!/usr/bin/env bash
# Session 26, call 5: no prefetch_split (LG_QWEN_PREFETCH_ITERS=0) against 2 at one sequence (8B,
# v7's EARLY form) and at the 0.6B shape, batches 16-128.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in 0 2; do
    { echo "== round $round hw8b-b1 p$v"
      LG_QWEN_PREFETCH_ITERS=$v timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 64 --batch 1 --context 512,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      echo "== round $round hw06b p$v"
      LG_QWEN_PREFETCH_ITERS=$v timeout 120 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 1,16,64,128 --context 512,1024 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0
