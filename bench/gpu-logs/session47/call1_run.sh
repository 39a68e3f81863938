#!/usr/bin/env bash
# Session 47, call 1 (H200 only: prints the card and exits on any other). Binaries from branch s47
# with session 38's call7_rows_early.patch and this session's call2_topk_probe.patch applied (each
# behind its own setting, LG_QWEN_ROWS_EARLY=1 and LG_COMPILED_TOPK_PROBE; off by default, so
# every other line runs the branch's code). The first try (16:12 UTC) found an H100 and exited.
# 1. Issue 13 on this card: session 42's call 1 (its header says what it runs) with the rows form's
#    early loads and the LM head as a row GEMV together as a sixth variant, without its Nsight pass.
# 2. Issue 14: the 8B serving load at main's default (session 40's 6,946 tokens/s on an H200
#    predates sessions 43-44's changes).
# 3. Issue 16: the 30B-A3B step at 1 and 16 sequences.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu" | tee "$out/gpu.txt"
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 rowshead:LG_QWEN_ROWS_HEAD=1 both:LG_QWEN_ROWS_EARLY=1,LG_QWEN_ROWS_HEAD=1 \
  v10:LG_QWEN_ATTN_V10=2 norows:LG_QWEN_ATTN_ROWS=0
serve_load ""
step_ms main bench/shapes/qwen3-30b-a3b
exit 0
