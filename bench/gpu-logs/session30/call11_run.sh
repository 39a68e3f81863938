#!/usr/bin/env bash
# Session 30, call 11 (H100): issue 13's ratio bars on this card, in one call: the hand-written 8B
# step at 1 / 16 / 64 / 128 sequences of 512 positions (main 9ec4cfa: the TMA row GEMV default)
# against transformers' batched decode (bench/peers/hf_batch_peer.py: static cache +
# torch.compile, prompts of 128, decode at 128-176 positions) at the same batch sizes.
set -uo pipefail
source bench/device_env.sh
timeout 150 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 \
  --context 512 --kv-tokens 80000 > "$out/bench_hw.txt" 2>&1
grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench_hw.txt"
timeout 330 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning | tee "$out/hf_batch_peer.txt"
exit 0
