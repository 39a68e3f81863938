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

/// swiglu_kernel four pairs a thread: two 16-byte loads and one 8-byte store (n4 = n / 4 groups;
/// gu 16-byte and act 8-byte aligned). Why: a pair a thread kept 8 bytes a thread in flight, and
/// the 640-row step's SwiGLU moved its 79 MB at 2.0 TB/s, 39 us a layer; four pairs: 26 us (H100,
/// bench/RESULTS.md, forty-third and forty-fourth sessions).
__global__ void swiglu4_kernel(const float4* __restrict__ gu, size_t n4, uint2* __restrict__ act) {
  grid_dependency_wait();  // launched with PDL behind the gate/up GEMM (launch_swiglu)
  launch_dependents();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float4 a = gu[2 * i], b = gu[2 * i + 1];  // (gate, up) of pairs 4i, 4i + 1; then 4i + 2, 4i + 3
    const __nv_bfloat162 lo = __floats2bfloat162_rn(silu(a.x) * a.y, silu(a.z) * a.w);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(silu(b.x) * b.y, silu(b.z) * b.w);
    act[i] = make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
  }
}

}  // namespace lg::qwen::dev
