// Tensor-core causal prefill attention for the hand-written Qwen lane: the shared FlashAttention-2
// template (src/kernels/flash_attention.cuh) with a policy that reads the lane's fp32 q and bf16 KV
// cache. A drop-in for launch_attention_prefill (kernels.h): same arguments, same result up to bf16
// rounding of q and of the softmax weights P (that launcher keeps both in fp32).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace lg::qwen {

/// Causal GQA prefill attention of T queries at positions *pos0 + t over cached positions
/// 0 .. *pos0 + t (earlier chunks included); query head h reads KV head h / (H / KV).
/// q f32 [T, H, Dh] (rounded to bf16 for the tensor cores); k_cache, v_cache bf16 [KV, S, Dh] of
/// this layer; pos0 a device int; out bf16 [T, H * Dh]; softmax scale 1 / sqrt(Dh). Enqueues one
/// kernel on `stream`, never synchronises (graph-capturable). Throws lg::Error when Dh is not one
/// of 16, 32, 64, 128, when H is not a positive multiple of KV, or T < 0. T == 0 launches nothing.
void launch_attention_prefill_tc(const float* q, const __nv_bfloat16* k_cache, const __nv_bfloat16* v_cache,
                                 const int* pos0, int T, int H, int KV, int Dh, int S, __nv_bfloat16* out,
                                 cudaStream_t stream);

}  // namespace lg::qwen
