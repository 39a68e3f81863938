#!/usr/bin/env bash
# Session 26, call 9: the batched attention's shortest split (LG_QWEN_ATTN_SPLIT, 128) at 16-64
# sequences of 512-1,024 positions, with the session's defaults: 64, 128, 256.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in 64 128 256; do
    { echo "== round $round hw8b s$v"
      LG_QWEN_ATTN_SPLIT=$v timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0
