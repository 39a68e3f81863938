#!/usr/bin/env bash
# Session 36, call 3: v11 (LG_QWEN_ATTN_BULK=1) lost 1-2% to v8 at 512 positions and gained under
# 1% at 1,024 in call 2 (H100). Now its first copies before the PDL wait (LG_QWEN_BULK_EARLY=1),
# and with all 4 heads of a group a block (LG_QWEN_ATTN_ROWS=2), against v8; the tests under the
# early copies; and what the attention costs the cuBLASLt step at all (LG_QWEN_SKIP=attention).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
qwen_tests 'QwenKernels.DecodeAttentionRopeBatch*:QwenMixedAttention.*:HandwrittenBatch*:*TinyBatch*' \
  LG_QWEN_ATTN_BULK=1 LG_QWEN_BULK_EARLY=1 | tail -3
echo "checks done at ${SECONDS} s"
b=LG_QWEN_ATTN_BULK=1
ab_rounds ab_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  v8: v11:$b v11early:$b,LG_QWEN_BULK_EARLY=1 v11wide:$b,LG_QWEN_ATTN_ROWS=2 v8wide:LG_QWEN_ATTN_ROWS=2
ab_rounds skip_attn.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  lt:LG_QWEN_GEMV_ROWS=0 lt-no-attention:LG_QWEN_GEMV_ROWS=0,LG_QWEN_SKIP=attention
echo "A/B done at ${SECONDS} s"
# On an H200 only (issue 13's card): session 35's waiting call 3 (device_env.sh), v11 beside.
h200_rows_and_bars LG_QWEN_ATTN_BULK=1
exit 0
