#!/usr/bin/env bash
# Session 36, call 2: v11, the batched decode attention's rows form fed by bulk copies
# (LG_QWEN_ATTN_BULK=1): the attention kernel tests (every form, v11 among them, against the
# reference; the mixed steps' row map), the batch tests under the knob, memcheck of the kernel
# test, then v8 against v11 at the sizes the plan gives the rows form (8B, 0.6B).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
qwen_tests 'QwenKernels.DecodeAttention*:QwenMixedAttention.*' | tail -3
qwen_tests 'HandwrittenBatch*:*TinyBatch*' LG_QWEN_ATTN_BULK=1 | tail -3
LG_SHARED_DIR=/tmp/lgshared timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='QwenKernels.DecodeAttentionRopeBatchAgainstReference:QwenMixedAttention.*' > "$out/memcheck_attn.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_attn.txt" | head -4
echo "checks done at ${SECONDS} s"
b=LG_QWEN_ATTN_BULK=1
ab_rounds ab_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  v8: v11:$b
ab_rounds ab_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  v8: v11:$b
echo "A/B done at ${SECONDS} s"

# On an H200 only (issue 13's card): session 35's waiting call 3 (device_env.sh), v11 beside.
h200_rows_and_bars LG_QWEN_ATTN_BULK=1
exit 0
