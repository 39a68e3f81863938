#!/usr/bin/env bash
# Session 35, call 5: lg bench after run_bench's split into phases (the same report and JSON
# expected: both lanes, a sampled run with penalties, --json, a skipped pair, a shape directory).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
a="--prompt-len 16 --decode-tokens 8 --context 128"
# shellcheck disable=SC2086  # the bench arguments split at spaces
{ timeout 60 $lg bench --shape qwen3-0.6b --lane handwritten $a --batch 1,4 --kv-tokens 400
  timeout 60 $lg bench --shape qwen3-0.6b --lane compiled $a --batch 1,4 --sample lane --sample-penalties 1.1,0.5,0.2
  timeout 60 $lg bench --shape qwen3-0.6b --lane handwritten $a --batch 2 --json
  timeout 90 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled $a --batch 1 --prompt-len 8
} 2>&1 | grep -v "^json:" | tee "$out/bench.txt"
exit 0
