#!/usr/bin/env bash
# Session 42, call 2 (any card): issue 14's mixed steps, measured, and v8's rows form issuing its
# first keys' loads before the queries (session 38's call 7, never run: no machine came then).
# 1. The device draw's tests on this session's Sampler (its edits merged once, in a new order).
# 2. The serving run's steps that carry a prompt chunk beside ~128 decodes took half its GPU time
#    (session 15's trace: 27.4 ms a step for ~686 prompt tokens + 128 decodes, against 9.78 for
#    the decodes alone: the decodes rode in the chunk's compute-bound GEMMs for nothing). New `lg
#    bench --prefill-chunk`: the decode step and the same step with one prompt chunk, next to its
#    floor; then Nsight Compute's duration of every kernel of one mixed step (128 decodes at 512
#    positions + a 512-token chunk).
# 3. LG_QWEN_ROWS_EARLY=1 (bench/gpu-logs/session38/call7_rows_early.patch, applied to this
#    build): the attention, batch and mixed tests with it, then the 8B step at 8-16 sequences of
#    256-512 positions against the default, two rounds.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'RowDraws.*'
$lg bench --shape qwen3-8b --lane handwritten --prompt-len 512,1024 --decode-tokens 16 --batch 32,128 \
  --context 512,1024 --prefill-chunk 128,512,1024 --kv-tokens 200000 2>&1 | tee "$out/mixed_8b.txt"
$lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 512,1024 --decode-tokens 16 --batch 128 \
  --context 512 --prefill-chunk 128,512,1024 --kv-tokens 200000 2>&1 | tee "$out/mixed_06b.txt"
ncu_last_step ncu_mixed_128x512_c512 '^embed_kernel' '^argmax_rows' "--shape qwen3-8b --lane handwritten \
--prompt-len 8 --decode-tokens 2 --batch 128 --context 512 --prefill-chunk 512 --kv-tokens 80000" 1800
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_early_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  old: early:LG_QWEN_ROWS_EARLY=1
exit 0
