// Token embedding gather into the fp32 residual stream: x[t] = f32(embed[tokens[t]]). Token ids
// are checked on the host before they reach the device.
#pragma once

#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

__global__ void embed_kernel(const bf16* __restrict__ table, const int* __restrict__ tokens, int D,
                             float* __restrict__ x) {
  const bf16* row = table + static_cast<size_t>(tokens[blockIdx.x]) * D;
  float* xr = x + static_cast<size_t>(blockIdx.x) * D;
  for (int k = threadIdx.x; k < D; k += blockDim.x) xr[k] = __bfloat162float(row[k]);
}

}  // namespace lg::qwen::dev
