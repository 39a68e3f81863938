#!/usr/bin/env bash
# Session 32, call 2 (not run: no device was lent in session 32): issue 13's bars at the context
# the references were measured at. transformers' batched peer decodes at 128-176 positions and
# the seed's 4.16 ms (B = 1) was timed after a 32-token prompt, while sessions 23-31 held the
# B = 16 bar (<= 5.0 ms) at 512 positions. Both contexts here, hand-written and compiled 8B,
# with transformers in the same call; the card's name first (the bars are the H200's).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 32,160,512 --kv-tokens 80000" \
  handwritten:
timeout 150 $lg bench --shape qwen3-8b --lane compiled --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 \
  --context 160,512 --kv-tokens 80000 > "$out/bench_compiled.txt" 2>&1
echo "compiled:"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_compiled.txt"
timeout 300 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning | tee "$out/hf_batch_peer.txt"
exit 0
