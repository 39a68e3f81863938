#!/usr/bin/env bash
# Session 30, call 5 (H100): is tma4's loss at 32 x 2,048 its blocks taking SMs early (PDL: the TMA
# row GEMV issues its first weight boxes before its dependency wait, so its blocks sit resident,
# shared memory held, while the attention's later blocks need the SMs)? The same steps with PDL
# off everywhere (LG_QWEN_PDL=0), base and tma4, two rounds.
set -uo pipefail
source bench/device_env.sh
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 base-nopdl:LG_QWEN_PDL=0 tma4-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_PDL=0
exit 0
