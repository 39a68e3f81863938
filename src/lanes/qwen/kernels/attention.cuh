// Ragged paged attention: the attention of a batched step (several sequences, kernels/paged.cuh)
// over the bf16 KV pool, causal GQA, fp32 softmax with the online (running max) form (Milakov &
// Gimelshein 2018; FlashAttention). Query head h reads KV head h / (H / KV). Token t belongs to
// sequence seq[t] at position pos[t] and sees exactly positions 0 .. pos[t] of that sequence,
// found through its block table.
//   One warp per (token, query head), 4 tokens of one head per block. CUDA cores, no tiling: simple
//   and right first; the batched decode at tensor-core speed is issue 13's.
// Each lane holds head_dim / 32 elements of q and of the output (DH = 16 uses half a warp).
// A token list makes a launch do only the listed tokens (the rows path's mixed steps send their
// decode tokens to the batched decode attention, attention_decode_gqa.cuh, and only the prompt
// tokens here).
// (One sequence's prefill: the tensor-core kernel of prefill_attention.cu; the decode step:
// attention_decode.cuh.)
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/paged.cuh"

namespace lg::qwen::dev {

constexpr int kAttnWarps = 4;

/// What the ragged attention reads and writes.
struct RaggedAttnParams {
  const float* q;           // f32 [all tokens, H, DH], RoPE applied
  const bf16* k_pool;       // bf16 [KV, rows, DH] of this layer
  const bf16* v_pool;
  const int* block_table;   // [B, table_stride]: row b is sequence b's blocks
  const int* seq;           // [all tokens]
  const int* pos;           // [all tokens]
  int table_stride;
  int T, H, KV, rows, block_shift;
  float scale;              // 1 / sqrt(DH)
  bf16* out;                // bf16 [all tokens, H * DH]
  const int* tokens;        // [T]: which tokens (rows of q, seq, pos, out) to do, or null (0 .. T-1)
};

template <int DH>
__global__ void __launch_bounds__(kAttnWarps * 32) attn_ragged_kernel(const RaggedAttnParams p) {
  constexpr int EPL = (DH + 31) / 32;  // elements per lane: d = lane + 32 e
  const int h = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i = blockIdx.y * kAttnWarps + warp;
  if (i >= p.T) return;  // the whole warp: nothing below synchronises the block
  const int t = p.tokens ? p.tokens[i] : i;
  const int kvh = h / (p.H / p.KV);
  const int* bt = p.block_table + static_cast<size_t>(p.seq[t]) * p.table_stride;
  const int last = p.pos[t];
  float q[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int d = lane + 32 * e;
    q[e] = d < DH ? p.q[(static_cast<size_t>(t) * p.H + h) * DH + d] : 0.f;
  }
  float m = kNegInf, l = 0.f, acc[EPL] = {};
  for (int j = 0; j <= last; ++j) {
    const size_t row = pool_offset<DH>(kvh, p.rows, paged_row(bt, j, p.block_shift));
    const bf16* kr = p.k_pool + row;
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane + 32 * e;
      if (d < DH) s = fmaf(q[e], __bfloat162float(kr[d]), s);
    }
    s = lg_warp_sum(s) * p.scale;
    const float m_new = fmaxf(m, s);
    const float corr = __expf(m - m_new);  // m = -inf first: exp(-inf) = 0
    const float pr = __expf(s - m_new);
    l = l * corr + pr;
    const bf16* vr = p.v_pool + row;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane + 32 * e;
      acc[e] = acc[e] * corr + (d < DH ? pr * __bfloat162float(vr[d]) : 0.f);
    }
    m = m_new;
  }
  const float inv = 1.f / l;  // key 0 .. last is at least one key: l >= 1
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int d = lane + 32 * e;
    if (d < DH) p.out[(static_cast<size_t>(t) * p.H + h) * DH + d] = __float2bfloat16(acc[e] * inv);
  }
}

}  // namespace lg::qwen::dev
