#!/usr/bin/env bash
# Session 44, call 6 (H200 only; any build of main since call 7): call 5's traced serving run on
# the card of issue 14's bar, to split its 23.4 s (session 40; 1.65x the serial floor, where the
# H100's run is 1.41x) into decode-only and mixed steps as call 5 did on the H100. (Call 2,
# issue 13's 16 x 512 knobs, needs session 38's early-keys patch in its build.)
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
LG_STEP_TRACE="$out/trace.csv" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" > "$out/load.txt" 2>&1
grep -E "output|TTFT|ITL|completed" "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
xz -f "$out/load.json" "$out/trace.csv"
echo "done at ${SECONDS}s"
exit 0
