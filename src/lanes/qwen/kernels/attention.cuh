// Causal GQA prefill attention over the bf16 KV cache, fp32 softmax with the online (running max)
// form (Milakov & Gimelshein 2018; FlashAttention). Query head h reads KV head h / (H / KV).
// (Decode attention: attention_decode.cuh.)
//   Prefill (T queries): one warp per query row, 4 consecutive queries of one head per block
//   (they share keys through L1). CUDA cores, not tensor cores: simple and right first.
// Each lane holds head_dim / 32 elements of q and of the output (DH = 16 uses half a warp).
#pragma once



#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

constexpr int kAttnWarps = 4;

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
      s = lg_warp_sum(s) * scale;
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

template <int DH>
__device__ void load_q(float (&q)[WarpAttn<DH>::EPL], const float* qh) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int e = 0; e < WarpAttn<DH>::EPL; ++e) {
    const int d = lane + 32 * e;
    q[e] = d < DH ? qh[d] : 0.f;
  }
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
