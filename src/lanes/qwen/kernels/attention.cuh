// Causal GQA attention over the bf16 KV cache, fp32 softmax with the online (running max) form
// (Milakov & Gimelshein 2018; FlashAttention). Query head h reads KV head h / (H / KV).
//   Decode (one query): split-KV. Grid (H, kSplits); each block takes a chunk of the cached
//   positions, its 4 warps stride over the keys, and writes a partial (max, sum, unnormalised
//   output); a combine kernel merges the splits. The chunk length comes from the current length
//   read on the device, so one captured graph serves every position.
//   Prefill (T queries): one warp per query row, 4 consecutive queries of one head per block
//   (they share keys through L1). CUDA cores, not tensor cores: simple and right first.
// Each lane holds head_dim / 32 elements of q and of the output (DH = 16 uses half a warp).
#pragma once



#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

constexpr int kAttnWarps = 4;
constexpr int kDecodeSplits = 32;
constexpr int kMinSplitLen = 32;

template <int DH> struct WarpAttn {
  static constexpr int EPL = (DH + 31) / 32;  // elements per lane
  float m = kNegInf, l = 0.f, acc[EPL] = {};

  /// Folds keys [k0, k1) (stepping by `step`) of one KV head into the running softmax.
  __device__ void run(const float (&q)[EPL], const bf16* kh, const bf16* vh, int k0, int k1, int step, float scale) {
    const int lane = threadIdx.x & 31;
    for (int j = k0; j < k1; j += step) {
      const bf16* kr = kh + static_cast<size_t>(j) * DH;
      float s = 0.f;
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        const int d = lane + 32 * e;
        if (d < DH) s = fmaf(q[e], __bfloat162float(kr[d]), s);
      }
      s = warp_sum(s) * scale;
      const float m_new = fmaxf(m, s);
      const float corr = __expf(m - m_new);  // m = -inf first: exp(-inf) = 0
      const float p = __expf(s - m_new);
      l = l * corr + p;
      const bf16* vr = vh + static_cast<size_t>(j) * DH;
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        const int d = lane + 32 * e;
        acc[e] = acc[e] * corr + (d < DH ? p * __bfloat162float(vr[d]) : 0.f);
      }
      m = m_new;
    }
  }
};

/// Merges the per-warp states of a block into shared memory; returns (in thread d < DH) the
/// block's max, sum and unnormalised output element d.
template <int DH>
__device__ void merge_warps(const WarpAttn<DH>& w, float& m_out, float& l_out, float& o_out) {
  __shared__ float s_m[kAttnWarps], s_l[kAttnWarps], s_o[kAttnWarps][DH];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_m[warp] = w.m;
    s_l[warp] = w.l;
  }
#pragma unroll
  for (int e = 0; e < WarpAttn<DH>::EPL; ++e) {
    const int d = lane + 32 * e;
    if (d < DH) s_o[warp][d] = w.acc[e];
  }
  __syncthreads();
  const int d = threadIdx.x;
  if (d >= DH) return;
  float m = kNegInf;
  for (int i = 0; i < kAttnWarps; ++i) m = fmaxf(m, s_m[i]);
  float l = 0.f, o = 0.f;
  for (int i = 0; i < kAttnWarps; ++i) {
    if (s_l[i] == 0.f) continue;  // a warp that saw no key
    const float c = __expf(s_m[i] - m);
    l += s_l[i] * c;
    o += s_o[i][d] * c;
  }
  m_out = m;
  l_out = l;
  o_out = o;
}

template <int DH>
__device__ void load_q(float (&q)[WarpAttn<DH>::EPL], const float* qh) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int e = 0; e < WarpAttn<DH>::EPL; ++e) {
    const int d = lane + 32 * e;
    q[e] = d < DH ? qh[d] : 0.f;
  }
}

/// Decode, pass 1. q f32 [H, DH]; caches bf16 [KV, S, DH]; partials [H, kDecodeSplits, DH+2].
template <int DH>
__global__ void __launch_bounds__(kAttnWarps * 32) attn_decode_split_kernel(const float* q_all, const bf16* k_cache,
                                                                            const bf16* v_cache, const int* pos0,
                                                                            int H, int KV, int S, float scale,
                                                                            float* partial) {
  const int h = blockIdx.x, split = blockIdx.y, warp = threadIdx.x >> 5;
  const int len = *pos0 + 1;
  const int chunk = max(kMinSplitLen, (len + kDecodeSplits - 1) / kDecodeSplits);
  const int k0 = split * chunk, k1 = min(len, k0 + chunk);
  float* out = partial + (static_cast<size_t>(h) * kDecodeSplits + split) * (DH + 2);
  if (k0 >= len) {  // nothing to see: mark the split empty for the combine
    if (threadIdx.x == 0) {
      out[DH] = kNegInf;
      out[DH + 1] = 0.f;
    }
    return;
  }
  const int kvh = h / (H / KV);
  float q[WarpAttn<DH>::EPL];
  load_q<DH>(q, q_all + static_cast<size_t>(h) * DH);
  WarpAttn<DH> w;
  const size_t base = static_cast<size_t>(kvh) * S * DH;
  w.run(q, k_cache + base, v_cache + base, k0 + warp, k1, kAttnWarps, scale);
  float m, l, o;
  merge_warps<DH>(w, m, l, o);
  if (threadIdx.x < DH) {
    out[threadIdx.x] = o;
    if (threadIdx.x == 0) {
      out[DH] = m;
      out[DH + 1] = l;
    }
  }
}

/// Decode, pass 2: merges the splits of head blockIdx.x; writes bf16 out [H * DH].
template <int DH>
__global__ void attn_decode_combine_kernel(const float* partial, bf16* out) {
  const int h = blockIdx.x, d = threadIdx.x;
  const float* p = partial + static_cast<size_t>(h) * kDecodeSplits * (DH + 2);
  float m = kNegInf;
  for (int s = 0; s < kDecodeSplits; ++s) m = fmaxf(m, p[s * (DH + 2) + DH]);
  float l = 0.f, o = 0.f;
  for (int s = 0; s < kDecodeSplits; ++s) {
    const float ls = p[s * (DH + 2) + DH + 1];
    if (ls == 0.f) continue;
    const float c = __expf(p[s * (DH + 2) + DH] - m);
    l += ls * c;
    o += p[s * (DH + 2) + d] * c;
  }
  out[static_cast<size_t>(h) * DH + d] = __float2bfloat16(o / l);
}

/// Prefill: q f32 [T, H, DH] at positions pos0 + t; writes bf16 out [T, H * DH]. Query t sees
/// cached positions 0 .. pos0 + t (earlier chunks included).
template <int DH>
__global__ void __launch_bounds__(kAttnWarps * 32) attn_prefill_kernel(const float* q_all, const bf16* k_cache,
                                                                       const bf16* v_cache, const int* pos0, int T,
                                                                       int H, int KV, int S, float scale, bf16* out) {
  const int h = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t = blockIdx.y * kAttnWarps + warp;
  if (t >= T) return;
  const int kvh = h / (H / KV);
  float q[WarpAttn<DH>::EPL];
  load_q<DH>(q, q_all + (static_cast<size_t>(t) * H + h) * DH);
  WarpAttn<DH> w;
  const size_t base = static_cast<size_t>(kvh) * S * DH;
  w.run(q, k_cache + base, v_cache + base, 0, *pos0 + t + 1, 1, scale);
  const float inv = 1.f / w.l;
#pragma unroll
  for (int e = 0; e < WarpAttn<DH>::EPL; ++e) {
    const int d = lane + 32 * e;
    if (d < DH) out[(static_cast<size_t>(t) * H + h) * DH + d] = __float2bfloat16(w.acc[e] * inv);
  }
}

}  // namespace lg::qwen::dev
