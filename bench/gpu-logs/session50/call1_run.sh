#!/usr/bin/env bash
# Session 50, call 1 (any card). Binaries: main 86dd3192 + session48/call8_one_row.patch +
# session38/call7_rows_early.patch (each behind its own setting), bundled with
# `LG_BUNDLE_FIXTURES=tiny-qwen3-moe scripts/device_bundle.sh build/src/cli/lg
# build/tests/lanes_compiled/compiled_lane_tests build/tests/lanes_qwen/qwen_lane_tests`.
# Issue 13's A/B at 8 and 16 sequences x 256 and 512 positions (session 48's call 2, the H200
# branch of session 49's call2_run.sh): default, the rows form's early loads, the LM head as a row
# GEMV, both, v10 attention, no rows form; two rounds, then the rows tests under the early loads.
# On a card other than the H200 the table still says which knob moves the 16 x 512 step on Hopper
# (the bar is the H200's). Session 49's 30B-A3B one-row A/B is dropped: the SASS of the one-row
# kernel (scripts/sass.sh, session 50) already says why it lost.
# First (seconds): bench/labs/l2_resident_gemv_lab.cu (built here with nvcc -O3 -std=c++17
# -arch=sm_90, carried as .carry/l2_gemv_lab.xz): can the q/k/v GEMV's 21 MB wait in the L2 while
# the experts' 75 MB stream past, and how fast is the GEMV from there.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
unpack_xz l2_gemv_lab && /tmp/l2_gemv_lab 15 2>&1 | tee "$out/l2_gemv_lab.txt"
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 rowshead:LG_QWEN_ROWS_HEAD=1 both:LG_QWEN_ROWS_EARLY=1,LG_QWEN_ROWS_HEAD=1 \
  v10:LG_QWEN_ATTN_V10=2 norows:LG_QWEN_ATTN_ROWS=0
# The early loads' correctness, last: needed only if they win.
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
exit 0
