#!/usr/bin/env bash
# Session 44, call 2 (H200 only): session 42's call 1 as prepared there (its comments below), on the
# build of call 1 (both patches applied).
# Session 42, call 1 (H200 only; session 41 prepared it, no H200 came then): session 40's call 10
# (at the TMA row-GEMV default, main's attention and LM-head lab knobs against the default at 8
# and 16 sequences of 256 and 512 positions: v10 where v8's rows form runs (LG_QWEN_ATTN_V10=2),
# the LM head as a row GEMV started by PDL (LG_QWEN_ROWS_HEAD=1), no rows form
# (LG_QWEN_ATTN_ROWS=0)), with session 38's rows form issuing its first keys' loads before the
# queries (LG_QWEN_ROWS_EARLY=1, its patch applied to this build; its tests first), two rounds;
# then Nsight Compute's duration of every kernel of the 8B hand-written step at 16 x 512 on this
# card (session 37's call 1 measured it on an H100): what is left between 5.10 ms and issue 13's 5.0.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 v10:LG_QWEN_ATTN_V10=2 rowshead:LG_QWEN_ROWS_HEAD=1 norows:LG_QWEN_ATTN_ROWS=0
ncu_durations ncu_16x512 300 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
exit 0
