#!/usr/bin/env bash
# Session 15, call 1: where issue 14's 8B serving run spends its time. `lg serve --shape qwen3-8b`
# under the 512-request load with every step traced (LG_STEP_TRACE: start, T, B, wall, GPU ms),
# at the default step budget (2,048 tokens) and at 8,192.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
serve_load() {  # serve_load TAG [serve options...]
  local tag=$1; shift
  LG_STEP_TRACE="$out/trace_$tag.csv" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 "$@" > "$out/serve_$tag.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  timeout 150 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load_$tag.json" > "$out/load_$tag.txt" 2>&1
  echo "== $tag"; grep -E "output|TTFT|ITL|mixed|completed" "$out/load_$tag.txt"
  curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used|^lg_.*steps|^lg_preempt" | tee -a "$out/load_$tag.txt"
  kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
  xz -9 -T4 "$out/trace_$tag.csv"
}
serve_load b2048
serve_load b8192 --max-step-tokens 8192
timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 --batch 64,128 \
  --context 512,1024 2>&1 | tail -8 | tee "$out/bench.txt"
exit 0
