#!/usr/bin/env bash
# Session 40, call 6 (H200): issue 14's 8B serving load with the TMA row GEMV now the H200's default
# up to 16 sequences (the run's tail): lg serve --shape qwen3-8b under bench/load_gen.py, 512
# requests, prompts 128-1,024 tokens, outputs 128-512, 128 at a time (session 18: 7,134 output
# tokens/s).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
$lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 150 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" > "$out/load.txt" 2>&1
grep -E "output|TTFT|ITL|mixed|completed" "$out/load.txt"
curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" | tee -a "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
exit 0
