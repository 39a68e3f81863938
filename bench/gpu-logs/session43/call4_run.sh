#!/usr/bin/env bash
# Session 43, call 4 (any card; not run: the session's device time ran out in failed starts).
# Needs a build with bench/gpu-logs/session43/call4_rope_swiglu.patch applied. Call 3's Nsight
# trace of a mixed step (128 decodes at 512 positions + a 512-token chunk, H100) put 28.6 us a
# layer in rope_kv_kernel (a block of Dh threads per (token, head) for 24 MB) and 39 us in the
# SwiGLU (79 MB at 2.0 TB/s, 8 bytes a thread in flight). New: rope_kv as a warp per (token,
# head) (LG_QWEN_ROPE_WARP, default on; 0 = the block form) and the SwiGLU four pairs a thread
# (LG_QWEN_SWIGLU_VEC, default on).
# 1. The hand-written kernels, mixed-attention and batch tests, then the Qwen locks on the
#    hand-written lane, alone and with --batch-with 16 (every prefill runs the new kernel).
# 2. Prefill at 512 and 2,048 tokens and the mixed steps, old forms against new, two rounds.
# 3. Nsight of the mixed step's kernels with the new form (kernel names carry a namespace: no ^).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'QwenKernels.*:QwenMixedAttention.*:HandwrittenBatch.*' | tail -4
hw_locks
echo "checks done at ${SECONDS}s"
for round in 1 2; do
  for v in "old:LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0" "new:"; do
    envs=${v#*:}
    echo "== round $round ${v%%:*}"
    # shellcheck disable=SC2086
    env $envs timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512,2048 --decode-tokens 16 \
      --batch 128 --context 512 --prefill-chunk 128,512,1024 --kv-tokens 200000 2>&1 | grep -E "prefill T=|^ +128 +512"
  done
done | tee "$out/ab_rope.txt"
echo "a/b done at ${SECONDS}s"
[ $SECONDS -lt 300 ] && ncu_last_step ncu_mixed_new 'embed_kernel' 'argmax_rows' "--shape qwen3-8b \
--lane handwritten --prompt-len 8 --decode-tokens 2 --batch 128 --context 512 --prefill-chunk 512 --kv-tokens 80000" 3000
echo "done at ${SECONDS}s"
exit 0
