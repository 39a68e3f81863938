#!/usr/bin/env bash
# Session 42, call 3 (any card): call 2 cut to what the last device minutes hold: the device
# draw's tests on the new Sampler, `lg bench --prefill-chunk` at the 8B shape, and the kernels of
# one mixed step under Nsight Compute (128 decodes at 512 positions + a 512-token chunk).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'RowDraws.*'
timeout 150 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 12 --batch 32,128 \
  --context 512,1024 --prefill-chunk 128,512,1024 --kv-tokens 200000 2>&1 | tee "$out/mixed_8b.txt"
ncu_last_step ncu_mixed_128x512_c512 '^embed_kernel' '^argmax_rows' "--shape qwen3-8b --lane handwritten \
--prompt-len 8 --decode-tokens 2 --batch 128 --context 512 --prefill-chunk 512 --kv-tokens 80000" 1800
exit 0
