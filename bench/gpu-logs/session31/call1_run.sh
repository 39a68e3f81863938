#!/usr/bin/env bash
# Session 31, call 1: issue 13's bars on the card this call gets (main 2f9c6d8: the TMA row GEMV
# default at <= 32 sequences). The hand-written 8B step at 1 / 16 / 64 / 128 sequences of 512
# positions against cuBLASLt (LG_QWEN_GEMV_ROWS=0), two rounds; the compiled lane at the same
# batch sizes; transformers' batched decode (bench/peers/hf_batch_peer.py) in the same call.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 512 --kv-tokens 80000" \
  new: cublaslt:LG_QWEN_GEMV_ROWS=0
timeout 150 $lg bench --shape qwen3-8b --lane compiled --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 \
  --context 512 --kv-tokens 80000 > "$out/bench_compiled.txt" 2>&1
echo "compiled:"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_compiled.txt"
timeout 300 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning | tee "$out/hf_batch_peer.txt"
exit 0
