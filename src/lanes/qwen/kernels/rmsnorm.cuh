// Prefill RMSNorm: h[t] = bf16(x[t] * rsqrt(mean(x[t]^2) + eps) * w), one block per token row;
// with a row map, h[b] = the same of x[rows[b]] (the final norm of a batched step, on each
// sequence's last token only). x is the fp32 residual stream; h feeds a tensor-core GEMM, hence bf16. Qwen's RMSNorm (HF
// Qwen2RMSNorm / Qwen3RMSNorm) normalises in fp32 and multiplies by the weight afterwards.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

__global__ void rmsnorm_rows_kernel(const float* __restrict__ x, const float* __restrict__ w, int D, float eps,
                                    const int* __restrict__ rows, bf16* __restrict__ h) {
  __shared__ float scratch[32];
  grid_dependency_wait();  // a no-op unless launched with PDL (launch_rmsnorm_rows(..., pdl))
  launch_dependents();
  const int src = rows ? rows[blockIdx.x] : static_cast<int>(blockIdx.x);
  const float* xr = x + static_cast<size_t>(src) * D;
  float ss = 0.f;
  for (int k = threadIdx.x; k < D; k += blockDim.x) ss = fmaf(xr[k], xr[k], ss);
  const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(D) + eps);
  bf16* hr = h + static_cast<size_t>(blockIdx.x) * D;
  for (int k = threadIdx.x; k < D; k += blockDim.x) hr[k] = __float2bfloat16(xr[k] * inv * w[k]);
}

}  // namespace lg::qwen::dev
