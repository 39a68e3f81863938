#!/usr/bin/env bash
# Session 43, call 1 (any card): issue 14's mixed steps. Session 15's trace fit the serving run's
# mixed steps (128 decodes + T prompt tokens, T ~ 390-1,970) as 8.4 ms + 24.6 us a prompt token,
# against 11.15 ms for the decodes alone: below ~400 prompt tokens a step, the fit says a prompt
# token costs far less than alone (the decodes' weight reads and the chunk's GEMM compute
# overlap). If so, a smaller step budget (--max-step-tokens, default 2,048) spreads the prompts
# over more steps and the run gets faster.
# 1. `lg bench --prefill-chunk` (never run on a GPU): the 128-sequence decode step and the same
#    step with one prompt chunk of 128-1,024 tokens, 8B, at 512 and 1,024 positions.
# 2. The serving load (session 40: 6,946 output tokens/s) at --max-step-tokens 2048 (default),
#    512 and 384 (a model of the run's steps, fitted to session 15's trace, predicts 22.2, 21.2 and
#    20.5 s: +8% at 384). Then, time allowing, the kernels of the 128 x 512 decode step.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 16 --batch 128 \
  --context 512,1024 --prefill-chunk 128,256,384,512,1024 --kv-tokens 200000 2>&1 | tee "$out/mixed_8b.txt"
echo "bench done at ${SECONDS}s"
serve_load() {  # tag, then lg serve's extra arguments
  local tag=$1; shift
  $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 "$@" > "$out/serve_$tag.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  echo "== $tag ($*), up at ${SECONDS}s"
  timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load_$tag.json" > "$out/load_$tag.txt" 2>&1
  grep -E "output|TTFT|ITL|completed" "$out/load_$tag.txt"
  curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" | tee -a "$out/load_$tag.txt"
  kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
  xz -f "$out/load_$tag.json"
}
serve_load t2048
serve_load t512 --max-step-tokens 512
serve_load t384 --max-step-tokens 384
[ $SECONDS -lt 420 ] && ncu_durations ncu_128x512 400 "--shape qwen3-8b --lane handwritten --prompt-len 8 \
--decode-tokens 24 --batch 128 --context 512 --kv-tokens 80000"
echo "done at ${SECONDS}s"
exit 0
