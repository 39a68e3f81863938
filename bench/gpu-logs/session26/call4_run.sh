#!/usr/bin/env bash
# Session 26, call 4: call 3 found the default 2 iterations of prefetch_split quicker than 8 or the
# whole split at 16-64 sequences; fewer? LG_QWEN_PREFETCH_ITERS 0, 1, 2, 3 alternated, two rounds.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in 0 1 2 3; do
    { echo "== round $round hw8b p$v"
      LG_QWEN_PREFETCH_ITERS=$v timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64,128 --context 512,1024 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0
