#!/usr/bin/env bash
# Session 40, call 5 (H200): the TMA row GEMV with 8 consumer warps a block (LG_QWEN_TMA_KHALVES=1,
# two a 16-row MMA tile, each half a stage's k), which won at 0.6B on this card in call 2 (0.98 /
# 1.11 / 1.37 ms at 2 / 8 / 16 against 1.02 / 1.16 / 1.38), at the 8B shape against the default
# (4 consumer warps), two rounds; the khalves kernel tests first.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
qwen_tests '*GemvRows*' LG_QWEN_TMA_KHALVES=1 | tail -3
ab_rounds ab_khalves.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16 --context 160,512 --kv-tokens 40000" \
  default: khalves:LG_QWEN_TMA_KHALVES=1
exit 0
