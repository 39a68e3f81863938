// Prefill SwiGLU (Shazeer 2020): act[t, i] = silu(gu[t, 2i]) * gu[t, 2i+1]. The gate and up
// projections are one GEMM whose weight rows are interleaved (gate_i, up_i) at upload, so a pair
// is adjacent in memory here and in the decode GEMV epilogue alike.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

__global__ void swiglu_kernel(const float2* __restrict__ gu, size_t n, bf16* __restrict__ act) {
  grid_dependency_wait();  // launched with PDL behind the gate/up GEMM (launch_swiglu)
  launch_dependents();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float2 p = gu[i];
    act[i] = __float2bfloat16(silu(p.x) * p.y);
  }
}

}  // namespace lg::qwen::dev
