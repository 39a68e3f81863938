#!/usr/bin/env bash
# Session 15, call 2: call 1's serving run again (default budget), its step trace returned in a tar
# (a call returns at most 8 files).
set -uo pipefail
source bench/device_env.sh
LG_STEP_TRACE="$out/trace_b2048.csv" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 150 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" > "$out/load.txt" 2>&1
grep -E "output|TTFT|ITL|mixed|completed" "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
tar -C "$out" -cJf "$out/traces.tar.xz" trace_b2048.csv && rm "$out/trace_b2048.csv"
exit 0
