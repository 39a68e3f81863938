#!/usr/bin/env bash
# Session 49, call 2 (any card; prepared, not run: every start from 21:47 to 23:11 UTC found no
# machine). Same binaries as call 1 (main + session48/call8_one_row.patch +
# session38/call7_rows_early.patch).
# On an H200: session 48's call 2, not run then (issue 13 on this card: session 47's call 1 A/B,
# default, rows form's early loads, LM head as a row GEMV, both, v10 attention, no rows form, at 8
# and 16 sequences x 256 and 512 positions, two rounds, after the rows tests under the early
# loads), then the 30B-A3B one-token step with and without call 1's one-token experts kernels.
# On any other card: why call 1's one-token experts kernels lost (3.37 against 3.25 ms on the
# H100): Nsight Compute's duration of each kernel of the 30B-A3B one-token step (400 launches past
# the first 3,000: graph replays, kernels serialized), with them and without.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu" | tee "$out/gpu.txt"
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
case "$gpu" in
  *H200*)
    qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
    ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
      default: early:LG_QWEN_ROWS_EARLY=1 rowshead:LG_QWEN_ROWS_HEAD=1 both:LG_QWEN_ROWS_EARLY=1,LG_QWEN_ROWS_HEAD=1 \
      v10:LG_QWEN_ATTN_V10=2 norows:LG_QWEN_ATTN_ROWS=0
    for r in 1 2; do
      bench_ms "one_row r$r" ab30.txt '1 +512' "$a30"
      bench_ms "own_kernel r$r" ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_ONE_ROW=0
    done
    ;;
  *)
    ncu_durations ncu30_one_row 400 "$a30"
    (export LG_COMPILED_MOE_ONE_ROW=0; ncu_durations ncu30_own 400 "$a30")
    ;;
esac
exit 0
