#!/usr/bin/env bash
# Session 40, call 10 (H200 only): at the new default, what is left between the 16 x 512 step (5.10
# ms) and issue 13's 5.0: the lab knobs of main's attention and LM head, measured on the H100 before,
# now on this card. default / v10 where v8's rows form runs (LG_QWEN_ATTN_V10=2) / the LM head as a
# row GEMV started by PDL (LG_QWEN_ROWS_HEAD=1) / no rows form (LG_QWEN_ATTN_ROWS=0), two rounds.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: v10:LG_QWEN_ATTN_V10=2 rowshead:LG_QWEN_ROWS_HEAD=1 norows:LG_QWEN_ATTN_ROWS=0
exit 0
