// Tensor-core causal prefill attention for the hand-written Qwen lane: the shared FlashAttention-2
// template (src/kernels/flash_attention.cuh) with a policy that reads the lane's fp32 q and one
// sequence's K/V from the paged bf16 pool through its block table. The attention of a step of one
// sequence (a prefill chunk); same result as launch_attention_ragged (kernels.h) up to bf16
// rounding of q and of the softmax weights P (that launcher keeps both in fp32).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "lanes/qwen/kernels.h"

namespace lg::qwen {

/// Causal GQA attention of T queries of one sequence, query t at position pos[t] over the
/// sequence's positions 0 .. pos[t] (earlier steps included); query head h reads KV head
/// h / (H / KV). q f32 [T, H, Dh] (rounded to bf16 for the tensor cores); cache: this layer's
/// pools; block_table device ints covering positions 0 .. max pos[t]; pos device int [T],
/// non-decreasing (the kernel starts the query tiles with the most keys first); out bf16
/// [T, H * Dh]; softmax scale 1 / sqrt(Dh). Enqueues one kernel on `stream`, never synchronises
/// (graph-capturable). Throws lg::Error when Dh is not one of 16, 32, 64, 128, when H is not a
/// positive multiple of KV, for a block size that is not a power of two, or T < 0. T == 0
/// launches nothing.
void launch_attention_prefill_tc(const float* q, const KvPages& cache, const int* block_table, const int* pos, int T,
                                 int H, int KV, int Dh, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace lg::qwen
