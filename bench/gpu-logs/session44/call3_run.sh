#!/usr/bin/env bash
# Session 44, call 3 (any card; the build of call 1): issue 14's serving load (session 43's call 1
# form: 512 requests, prompts 128-1024, outputs 128-512, concurrency 128, at the 8B shape) with
# rope_kv and the SwiGLU in their old forms (LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0) and new,
# alternating, two rounds. Call 1 measured the kernels: prefill at 512 tokens -6.4%, the mixed step
# of 128 decodes + a 512-token chunk -4.5%, the 128 x 512 decode step -1.5% (H100).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
serve_load() {  # tag, then env assignments for lg serve
  local tag=$1; shift
  env "$@" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve_$tag.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  echo "== $tag ($*), up at ${SECONDS}s"
  timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load_$tag.json" > "$out/load_$tag.txt" 2>&1
  grep -E "output|TTFT|ITL|completed" "$out/load_$tag.txt"
  kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
  xz -f "$out/load_$tag.json"
}
for round in 1 2; do
  serve_load "old$round" LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0
  serve_load "new$round" LG_QWEN_ROPE_WARP=1
done
echo "done at ${SECONDS}s"
exit 0
