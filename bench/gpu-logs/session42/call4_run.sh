#!/usr/bin/env bash
# Session 42, call 4 (any card): the last device minutes: `lg bench --prefill-chunk` at the 8B
# shape alone (its first run on a GPU; the mixed step's numbers for issue 14).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 10 --batch 128 \
  --context 512 --prefill-chunk 128,512,1024 --kv-tokens 120000 2>&1 | tee "$out/mixed_8b.txt"
exit 0
