#!/usr/bin/env bash
# Session 44, call 10 (any card): the re-read's refactor (the gate/up GEMM and SwiGLU form chosen in
# one place, State::gate_up / swiglu; silu_mul4 shared by the four-pair SwiGLU kernels) through the
# lane's kernel, batch, mixed and fixture tests, in the default forms and the knobs' other forms,
# and the Qwen locks.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
qwen_tests 'QwenKernels.*:QwenMixedAttention.*:HandwrittenBatch.*:HandwrittenLane.*:TinyFixture*' | tail -2
qwen_tests 'QwenKernels.RopeQkNormBiasAndKvWrite:QwenKernels.RmsNormRowsSwiGLUEmbed:HandwrittenBatch.MixedStepsAgreeWithRunsAlone' \
  LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0 LG_QWEN_GU_BF16=0 | tail -2
hw_locks
echo "done at ${SECONDS}s"
exit 0
