#!/usr/bin/env bash
# Session 29, call 2: call 1 cut again for the device time left after ten failed starts: the TMA
# row GEMV's kernel tests, then the 8B step of 8 / 16 / 32 sequences at 512 positions, default
# (cuBLASLt) against LG_QWEN_GEMV_ROWS=2, one round.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'QwenGemvRows.*' || { [ $? = 124 ] && exit 0; }
ab_rounds bench.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16,32 --context 512 --kv-tokens 30000" \
  base: tma:LG_QWEN_GEMV_ROWS=2
exit 0
