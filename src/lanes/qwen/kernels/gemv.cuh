// Decode GEMV, y = W x for one token: W bf16 [N, K] row-major streamed once with 16-byte loads,
// x staged in shared memory as bf16. Decode at batch 1 is bound by reading W, so everything else
// (the RMSNorm before it, the residual add or SwiGLU after it) is fused here to skip launches and
// round trips through device memory.
//   Prologue kRmsNorm: x = rms_norm(x_f32, norm_w, eps) computed by every block (x is D floats,
//                      a few KB from L2: cheaper than a separate launch).
//   Prologue kBf16:    x = in_bf16 (e.g. attention output, SwiGLU activation).
//   Epilogue kStore:   out_f32[n] = y[n]
//   Epilogue kResidual: out_f32[n] += y[n] (the residual stream; o_proj and down_proj)
//   Epilogue kSwiGLU:  rows come in (gate, up) pairs: out_bf16[n/2] = silu(y[n]) * y[n+1]
// Each warp owns two adjacent rows, so a SwiGLU pair never crosses warps and every lane keeps
// 2 x 4 independent 16-byte loads in flight.
#pragma once

#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

enum class GemvIn { kRmsNorm, kBf16 };
enum class GemvOut { kStore, kResidual, kSwiGLU };

constexpr int kGemvThreads = 128;
constexpr int kGemvRowsPerWarp = 2;
constexpr int kGemvRowsPerBlock = (kGemvThreads / 32) * kGemvRowsPerWarp;

template <GemvIn IN, GemvOut OUT>
__global__ void __launch_bounds__(kGemvThreads) gemv_kernel(const bf16* __restrict__ W, int N, int K,
                                                            const float* __restrict__ x_f32,
                                                            const bf16* __restrict__ in_bf16,
                                                            const float* __restrict__ norm_w, float eps,
                                                            float* __restrict__ out_f32, bf16* __restrict__ out_bf16) {
  extern __shared__ uint4 smem_u4[];
  bf16* s_x = reinterpret_cast<bf16*>(smem_u4);
  __shared__ float scratch[32];
  if constexpr (IN == GemvIn::kRmsNorm) {
    float ss = 0.f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      float v = x_f32[k];
      ss = fmaf(v, v, ss);
    }
    const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(K) + eps);
    for (int k = threadIdx.x; k < K; k += blockDim.x) s_x[k] = __float2bfloat16(x_f32[k] * inv * norm_w[k]);
  } else {
    const uint4* src = reinterpret_cast<const uint4*>(in_bf16);
    for (int c = threadIdx.x; c < K / 8; c += blockDim.x) smem_u4[c] = src[c];
  }
  __syncthreads();

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * kGemvRowsPerBlock + warp * kGemvRowsPerWarp;
  if (row >= N) return;
  const int nc = K / 8;
  const uint4* w0 = reinterpret_cast<const uint4*>(W + static_cast<size_t>(row) * K);
  const uint4* w1 = w0 + nc;
  float a0 = 0.f, a1 = 0.f;
  int c = lane;
  // Four chunks per lane per iteration, all loads issued before any math.
  for (; c + 96 < nc; c += 128) {
    uint4 u0[4], u1[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      u0[j] = __ldg(w0 + c + 32 * j);
      u1[j] = __ldg(w1 + c + 32 * j);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint4 xv = smem_u4[c + 32 * j];
      a0 += dot8(u0[j], xv);
      a1 += dot8(u1[j], xv);
    }
  }
  for (; c < nc; c += 32) {
    const uint4 xv = smem_u4[c];
    a0 += dot8(__ldg(w0 + c), xv);
    a1 += dot8(__ldg(w1 + c), xv);
  }
  a0 = warp_sum(a0);
  a1 = warp_sum(a1);
  if (lane != 0) return;
  if constexpr (OUT == GemvOut::kStore) {
    out_f32[row] = a0;
    out_f32[row + 1] = a1;
  } else if constexpr (OUT == GemvOut::kResidual) {
    out_f32[row] += a0;
    out_f32[row + 1] += a1;
  } else {
    out_bf16[row / 2] = __float2bfloat16(silu(a0) * a1);
  }
}

}  // namespace lg::qwen::dev
