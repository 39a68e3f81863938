#!/usr/bin/env bash
# Session 44, call 7 (any card): the gate/up product in bf16. The cuBLASLt steps (prefill, mixed,
# batched decode past the row GEMV) wrote gate/up in f32 for the SwiGLU to read: at 640 rows 63 MB
# written and read again a layer (the SwiGLU 26 us at the copy rate, call 1). cuBLASLt now writes
# it in bf16 (fp32 accumulation; transformers' bf16 forward rounds gate_proj and up_proj's outputs
# too) and the SwiGLU reads 16 bytes for four pairs (LG_QWEN_GU_BF16=0: the f32 form).
# Predicted: the SwiGLU ~26 -> ~14 us a layer at 640 rows, ~9 -> ~5.5 at 128; the mixed step
# -2.5%, the 128-sequence decode step -2%, serving +2%.
# 1. The lane's kernel, batch, mixed and fixture tests; the Qwen locks alone and --batch-with 16.
# 2. lg bench old/new, two rounds; 3. issue 14's serving load old/new, alternating, two rounds.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'QwenKernels.*:QwenMixedAttention.*:HandwrittenBatch.*:HandwrittenLane.*:TinyFixture*' | tail -3
grep -E "^\[  FAILED|Failure|rel" "$out/qwen_tests_1.txt" | head -20
hw_locks
echo "checks done at ${SECONDS}s"
for round in 1 2; do
  for v in "f32:LG_QWEN_GU_BF16=0" "bf16:LG_QWEN_GU_BF16=1"; do
    echo "== round $round ${v%%:*}"
    env ${v#*:} timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512,2048 --decode-tokens 16 \
      --batch 64,128 --context 512 --prefill-chunk 512 --kv-tokens 200000 2>&1 | grep -E "prefill T=|^ +(64|128) +512"
  done
done | tee "$out/ab_gu.txt"
echo "a/b done at ${SECONDS}s"
[ $SECONDS -lt 330 ] && for round in 1 2; do
  serve_load "f32_$round" LG_QWEN_GU_BF16=0
  serve_load "bf16_$round" LG_QWEN_GU_BF16=1
done
echo "done at ${SECONDS}s"
exit 0
