#!/usr/bin/env bash
# Session 44, call 3 (any card; the build of call 1): issue 14's serving load (session 43's call 1
# form: 512 requests, prompts 128-1024, outputs 128-512, concurrency 128, at the 8B shape) with
# rope_kv and the SwiGLU in their old forms (LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0) and new,
# alternating, two rounds. Call 1 measured the kernels: prefill at 512 tokens -6.4%, the mixed step
# of 128 decodes + a 512-token chunk -4.5%, the 128 x 512 decode step -1.5% (H100).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for round in 1 2; do
  serve_load "old$round" LG_QWEN_ROPE_WARP=0 LG_QWEN_SWIGLU_VEC=0
  serve_load "new$round" LG_QWEN_ROPE_WARP=1
done
echo "done at ${SECONDS}s"
exit 0
