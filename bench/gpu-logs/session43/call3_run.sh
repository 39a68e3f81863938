#!/usr/bin/env bash
# Session 43, call 3 (any card).
# 1. v9's decode attention with three stages of K/V tiles (LG_QWEN_ATTN_TC_STAGES=3, new: two
#    64-key tiles in flight while one is computed, at the same two blocks an SM) where call 1 saw
#    it stream 2.33 TB/s of the H100's 3.35 at 128 x 512 (115 us a layer against 80): its tests
#    (the batched attention against the reference, every form, short and long chunks; the mixed
#    step's row map), then the 8B step at 64 and 128 sequences of 512 and 1,024 positions, stages
#    2 against 3, two rounds.
# 2. Call 1's first part again, `lg bench --prefill-chunk` with its lane sized for the chunk's
#    sequence beside the batch; then Nsight Compute's duration of every kernel of one mixed step
#    (128 x 512 + a 512-token chunk), time allowing.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'QwenKernels.DecodeAttentionRopeBatchAgainstReference:QwenMixedAttention.*' LG_QWEN_ATTN_TC_STAGES=3 | tail -5
ab_rounds ab_stages.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 64,128 \
--context 512,1024 --kv-tokens 200000" two: three:LG_QWEN_ATTN_TC_STAGES=3
echo "a/b done at ${SECONDS}s"
timeout 200 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 16 --batch 128 \
  --context 512,1024 --prefill-chunk 128,256,512,1024 --kv-tokens 200000 2>&1 | tee "$out/mixed_8b.txt"
echo "bench done at ${SECONDS}s"
[ $SECONDS -lt 330 ] && ncu_last_step ncu_mixed_128x512_c512 '^embed_kernel' '^argmax_rows' "--shape qwen3-8b \
--lane handwritten --prompt-len 8 --decode-tokens 2 --batch 128 --context 512 --prefill-chunk 512 --kv-tokens 80000" 3000
echo "done at ${SECONDS}s"
exit 0
