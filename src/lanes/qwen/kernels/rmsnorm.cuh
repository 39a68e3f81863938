// Prefill RMSNorm: h[t] = bf16(x[t] * rsqrt(mean(x[t]^2) + eps) * w), one block per token row;
// with a row map, h[b] = the same of x[rows[b]] (the final norm of a batched step, on each
// sequence's last token only). x is the fp32 residual stream; h feeds a tensor-core GEMM, hence bf16. Qwen's RMSNorm (HF
// Qwen2RMSNorm / Qwen3RMSNorm) normalises in fp32 and multiplies by the weight afterwards.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

/// Most split-K slices rmsnorm_rows_kernel sums (the row GEMV's most K splits).
inline constexpr int kRmsNormMaxParts = 16;
/// Slices whose loads are in flight at once (registers: kRmsNormPartsInFlight x VPT float4).
inline constexpr int kRmsNormPartsInFlight = 4;

/// Grid (rows), 256 threads. VPT > 0 (D % 4 == 0, D <= 4 * VPT * blockDim.x, x and w 16-byte
/// aligned): each thread loads its VPT float4 of the row at once and keeps them in registers, so a
/// row costs one round trip to memory and one read of x. A batched decode step runs 16-128 rows on
/// as many SMs, where the strided scalar loop (VPT = 0, any D) waited on one load after another:
/// 15 us a launch at B = 16 under ncu (bench/RESULTS.md, tenth session).
///
/// With ADD (no row map, 1 <= nparts <= kRmsNormMaxParts), the residual add of a split-K GEMM
/// rides here first: x[t] += parts[0][t] + ... + parts[nparts-1][t], added in that order (parts
/// f32 [nparts, rows, D], LtGemm::matmul_split or the row GEMV's kSlices), written back to x, then
/// normalised.
template <int VPT, bool ADD>
__global__ void rmsnorm_rows_kernel(float* __restrict__ x, const float* __restrict__ w, int D, float eps,
                                    const int* __restrict__ rows, bf16* __restrict__ h,
                                    const float* __restrict__ parts, int nparts) {
  __shared__ float scratch[32];
  grid_dependency_wait();  // a no-op unless launched with PDL (launch_rmsnorm_rows(..., pdl))
  launch_dependents();
  const int src = rows ? rows[blockIdx.x] : static_cast<int>(blockIdx.x);
  float* xr = x + static_cast<size_t>(src) * D;
  bf16* hr = h + static_cast<size_t>(blockIdx.x) * D;
  const size_t part_stride = static_cast<size_t>(gridDim.x) * D;  // slices are [nparts, rows, D]
  const float* pr = ADD ? parts + static_cast<size_t>(blockIdx.x) * D : nullptr;
  if constexpr (VPT == 0) {
    float ss = 0.f;
    for (int k = threadIdx.x; k < D; k += blockDim.x) {
      float v = xr[k];
      if constexpr (ADD) {
        for (int p = 0; p < nparts; ++p) v += pr[p * part_stride + k];
        xr[k] = v;
      }
      ss = fmaf(v, v, ss);
    }
    const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(D) + eps);
    for (int k = threadIdx.x; k < D; k += blockDim.x) hr[k] = __float2bfloat16(xr[k] * inv * w[k]);
  } else {
    const int n4 = D / 4;
    float4 v[VPT];
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int k = threadIdx.x + i * static_cast<int>(blockDim.x);
      v[i] = k < n4 ? reinterpret_cast<const float4*>(xr)[k] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    if constexpr (ADD) {
      // Four slices' loads at a time, all in flight at once: with a loop that added each slice as
      // it came, the 8B step gained nothing from split-K (bench/RESULTS.md, eleventh session, call 2).
      for (int p0 = 0; p0 < nparts; p0 += kRmsNormPartsInFlight) {
        float4 a[kRmsNormPartsInFlight][VPT];
#pragma unroll
        for (int j = 0; j < kRmsNormPartsInFlight; ++j) {
          const float4* pp = reinterpret_cast<const float4*>(pr + (p0 + j) * part_stride);
#pragma unroll
          for (int i = 0; i < VPT; ++i) {
            const int k = threadIdx.x + i * static_cast<int>(blockDim.x);
            a[j][i] = p0 + j < nparts && k < n4 ? pp[k] : make_float4(0.f, 0.f, 0.f, 0.f);
          }
        }
#pragma unroll
        for (int j = 0; j < kRmsNormPartsInFlight; ++j)
#pragma unroll
          for (int i = 0; i < VPT; ++i)
            if (p0 + j < nparts) v[i].x += a[j][i].x, v[i].y += a[j][i].y, v[i].z += a[j][i].z, v[i].w += a[j][i].w;
      }
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int k = threadIdx.x + i * static_cast<int>(blockDim.x);
        if (k < n4) reinterpret_cast<float4*>(xr)[k] = v[i];
      }
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i) ss += v[i].x * v[i].x + v[i].y * v[i].y + v[i].z * v[i].z + v[i].w * v[i].w;
    const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(D) + eps);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int k = threadIdx.x + i * static_cast<int>(blockDim.x);
      if (k >= n4) break;
      const float4 g = reinterpret_cast<const float4*>(w)[k];
      const __nv_bfloat162 lo = __floats2bfloat162_rn(v[i].x * inv * g.x, v[i].y * inv * g.y);
      const __nv_bfloat162 hi = __floats2bfloat162_rn(v[i].z * inv * g.z, v[i].w * inv * g.w);
      uint2 packed;
      packed.x = *reinterpret_cast<const unsigned*>(&lo);
      packed.y = *reinterpret_cast<const unsigned*>(&hi);
      reinterpret_cast<uint2*>(hr)[k] = packed;
    }
  }
}

}  // namespace lg::qwen::dev
