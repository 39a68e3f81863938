#!/usr/bin/env bash
# Session 31, call 2 (H200): call 1 found the TMA row GEMV default slower than cuBLASLt at 16 x 512
# on the H200 (5.34-5.37 against 5.24), unlike the H100. Which row GEMV form wins where on this
# card: default (TMA, 8 stages <= 8 sequences, 4 above), cuBLASLt, TMA with 8 stages everywhere,
# the register form; 8B, 2-32 sequences, 512 positions, two rounds; the 0.6B shape one round.
set -uo pipefail
source bench/device_env.sh
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  new: cublaslt:LG_QWEN_GEMV_ROWS=0 tma8:LG_QWEN_TMA_STAGES=8 reg:LG_QWEN_GEMV_ROWS=1
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  new: cublaslt:LG_QWEN_GEMV_ROWS=0 tma8:LG_QWEN_TMA_STAGES=8
exit 0
