// After the fused QKV projection: q/k/v bias (Qwen2), per-head RMSNorm of q and k (Qwen3's
// qk-norm), RoPE on q and k, and the KV-cache write, in one launch: a warp per (token, head) of the
// H + 2 KV heads where head_dim is 64, 128 or 256 (rope_kv_warp_kernel), else a block per (token,
// head), a thread per element of head_dim (rope_kv_kernel).
// RoPE is HF's rotate-half form: for i < Dh/2, with angle = pos * inv_freq[i] in fp32 and
// inv_freq[i] = theta^(-2i/Dh) (computed on the host in fp32 as transformers does):
//   out[i]        = x[i] cos - x[i + Dh/2] sin
//   out[i + Dh/2] = x[i + Dh/2] cos + x[i] sin
// Each token brings its own position and its own pool row (its "slot": where its sequence's block
// table puts that position, kernels/paged.cuh), both from device memory: the tokens of a ragged
// batch belong to different sequences at unrelated positions.
#pragma once

#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

struct RopeKvArgs {
  const float* qkv;      ///< f32 [T, (H + 2 KV) * Dh], straight out of the projection
  const float* bias;     ///< f32 [(H + 2 KV) * Dh] or null
  const float* q_norm;   ///< f32 [Dh] or null (no qk-norm)
  const float* k_norm;   ///< f32 [Dh] or null
  const float* inv_freq; ///< f32 [Dh / 2]
  const int* pos;        ///< device int [T]: each token's position
  const int* slot;       ///< device int [T]: each token's pool row
  float eps;
  int H, KV, Dh, rows;   ///< rows: pool rows per KV head
  float* q_out;          ///< f32 [T, H, Dh]
  bf16* k_cache;         ///< bf16 [KV, rows, Dh] (this layer's pool)
  bf16* v_cache;         ///< bf16 [KV, rows, Dh]
};

__global__ void rope_kv_kernel(RopeKvArgs a) {
  __shared__ float s_vec[256];
  __shared__ float scratch[32];
  const int head = blockIdx.x, t = blockIdx.y, d = threadIdx.x;
  const int Dh = a.Dh, width = (a.H + 2 * a.KV) * Dh;
  const int pos = a.pos[t];
  const size_t slot = static_cast<size_t>(a.slot[t]);
  float v = a.qkv[static_cast<size_t>(t) * width + head * Dh + d];
  if (a.bias) v += a.bias[head * Dh + d];
  if (head >= a.H + a.KV) {  // value head: straight into the cache
    const int kvh = head - a.H - a.KV;
    a.v_cache[(static_cast<size_t>(kvh) * a.rows + slot) * Dh + d] = __float2bfloat16(v);
    return;
  }
  const bool is_q = head < a.H;
  const float* nw = is_q ? a.q_norm : a.k_norm;
  if (nw) {
    const float ss = block_sum(v * v, scratch);
    v = v * rsqrtf(ss / static_cast<float>(Dh) + a.eps) * nw[d];
  }
  s_vec[d] = v;
  __syncthreads();
  const int half = Dh / 2;
  const int i = d < half ? d : d - half;
  const float ang = static_cast<float>(pos) * a.inv_freq[i];
  float sn, cs;
  sincosf(ang, &sn, &cs);
  const float out = d < half ? v * cs - s_vec[d + half] * sn : v * cs + s_vec[d - half] * sn;
  if (is_q) {
    a.q_out[(static_cast<size_t>(t) * a.H + head) * Dh + d] = out;
  } else {
    const int kvh = head - a.H;
    a.k_cache[(static_cast<size_t>(kvh) * a.rows + slot) * Dh + d] = __float2bfloat16(out);
  }
}

/// rope_kv_kernel's math with a warp per (token, head), 4 warps a block, for Dh = 32 EPL with EPL
/// even: lane l holds elements l + 32 j (j < EPL), so each load and store of the warp is contiguous
/// (128 bytes of f32, 64 of the cache's bf16) and the rotate-half partner of element j is the same
/// lane's j + EPL / 2 (no shuffles, no block barrier; the qk-norm's sum is a warp reduction).
/// Why: a block per (token, head) of Dh threads, each one element, took 28.6 us a layer of a
/// 640-row step at 8B on the H100 (24 MB moved: ~8 us at the copy rate); this form 10.2 us, the
/// 512-token prefill 14.1 -> 13.2 ms with the SwiGLU's four pairs a thread (bench/RESULTS.md,
/// forty-fourth session).
template <int EPL>
__global__ void __launch_bounds__(128) rope_kv_warp_kernel(RopeKvArgs a, int T) {
  constexpr int Dh = 32 * EPL, half = EPL / 2;
  const int heads = a.H + 2 * a.KV, lane = threadIdx.x & 31;
  const int item = blockIdx.x * 4 + (threadIdx.x >> 5);
  if (item >= T * heads) return;
  const int t = item / heads, head = item % heads;
  const size_t slot = static_cast<size_t>(a.slot[t]);
  const float* src = a.qkv + static_cast<size_t>(t) * heads * Dh + head * Dh + lane;
  float v[EPL];
#pragma unroll
  for (int j = 0; j < EPL; ++j) {
    v[j] = src[32 * j];
    if (a.bias) v[j] += a.bias[head * Dh + lane + 32 * j];
  }
  if (head >= a.H + a.KV) {  // value head: straight into the cache
    bf16* dst = a.v_cache + (static_cast<size_t>(head - a.H - a.KV) * a.rows + slot) * Dh + lane;
#pragma unroll
    for (int j = 0; j < EPL; ++j) dst[32 * j] = __float2bfloat16(v[j]);
    return;
  }
  const bool is_q = head < a.H;
  if (const float* nw = is_q ? a.q_norm : a.k_norm) {
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < EPL; ++j) ss += v[j] * v[j];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float r = rsqrtf(ss / static_cast<float>(Dh) + a.eps);
#pragma unroll
    for (int j = 0; j < EPL; ++j) v[j] = v[j] * r * nw[lane + 32 * j];
  }
  const float pos = static_cast<float>(a.pos[t]);
  float out[EPL];
#pragma unroll
  for (int j = 0; j < half; ++j) {  // elements d = lane + 32 j < Dh / 2 and their partners d + Dh / 2
    float sn, cs;
    sincosf(pos * a.inv_freq[lane + 32 * j], &sn, &cs);
    out[j] = v[j] * cs - v[j + half] * sn;
    out[j + half] = v[j + half] * cs + v[j] * sn;
  }
  if (is_q) {
    float* dst = a.q_out + (static_cast<size_t>(t) * a.H + head) * Dh + lane;
#pragma unroll
    for (int j = 0; j < EPL; ++j) dst[32 * j] = out[j];
  } else {
    bf16* dst = a.k_cache + (static_cast<size_t>(head - a.H) * a.rows + slot) * Dh + lane;
#pragma unroll
    for (int j = 0; j < EPL; ++j) dst[32 * j] = __float2bfloat16(out[j]);
  }
}

}  // namespace lg::qwen::dev
