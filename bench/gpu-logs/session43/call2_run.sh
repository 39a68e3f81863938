#!/usr/bin/env bash
# Session 43, call 2 (H200 only): session 42's call 1 (no machine came then): session 40's call 10
# (at the TMA row-GEMV default, main's attention and LM-head lab knobs against the default at 8
# and 16 sequences of 256 and 512 positions: v10 where v8's rows form runs (LG_QWEN_ATTN_V10=2),
# the LM head as a row GEMV started by PDL (LG_QWEN_ROWS_HEAD=1), no rows form
# (LG_QWEN_ATTN_ROWS=0)), with session 38's rows form issuing its first keys' loads before the
# queries (LG_QWEN_ROWS_EARLY=1, its patch applied to this build; its tests first), two rounds;
# then Nsight Compute's duration of every kernel of the 8B hand-written step at 16 x 512 on this
# card (session 37's call 1 measured it on an H100): what is left between 5.10 ms and issue 13's 5.0.
# Last, the kernels of one mixed step (128 decodes at 512 positions + a 512-token chunk; session 42's
# call 2) if the time allows.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 v10:LG_QWEN_ATTN_V10=2 rowshead:LG_QWEN_ROWS_HEAD=1 norows:LG_QWEN_ATTN_ROWS=0
ncu_durations ncu_16x512 300 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
[ $SECONDS -lt 360 ] && ncu_last_step ncu_mixed_128x512_c512 '^embed_kernel' '^argmax_rows' "--shape qwen3-8b \
--lane handwritten --prompt-len 8 --decode-tokens 2 --batch 128 --context 512 --prefill-chunk 512 --kv-tokens 80000" 1800
echo "done at ${SECONDS}s"
exit 0
