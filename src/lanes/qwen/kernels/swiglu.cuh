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

/// The SwiGLU of a bf16 gate/up product (cuda::LtGemm::matmul_bf16): four pairs a thread from one
/// 16-byte load, one 8-byte store (groups i < n / 4), and the last n % 4 pairs one a thread; gu
/// 16-byte and act 8-byte aligned. The product rounded to bf16 before silu, as transformers' bf16
/// forward has it (its gate_proj and up_proj outputs are bf16), halves the bytes the GEMM writes
/// and this reads: H100, 8B, the 512-token prefill -3.8%, the mixed step of 128 decodes and a
/// 512-token chunk -1.9%, the serving load +1.3% (bench/RESULTS.md, forty-fourth session).
__global__ void swiglu_bf16_kernel(const __nv_bfloat16* __restrict__ gu, size_t n, bf16* __restrict__ act) {
  grid_dependency_wait();  // launched with PDL behind the gate/up GEMM (launch_swiglu_bf16)
  launch_dependents();
  const size_t n4 = n / 4, items = n4 + n % 4;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < items;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (i < n4) {
      const uint4 v = reinterpret_cast<const uint4*>(gu)[i];
      const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);  // (gate, up) of pairs 4i .. 4i + 3
      float2 q[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) q[j] = __bfloat1622float2(p[j]);
      const __nv_bfloat162 lo = __floats2bfloat162_rn(silu(q[0].x) * q[0].y, silu(q[1].x) * q[1].y);
      const __nv_bfloat162 hi = __floats2bfloat162_rn(silu(q[2].x) * q[2].y, silu(q[3].x) * q[3].y);
      reinterpret_cast<uint2*>(act)[i] =
          make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
    } else {
      const size_t k = 4 * n4 + (i - n4);
      act[k] = __float2bfloat16(silu(__bfloat162float(gu[2 * k])) * __bfloat162float(gu[2 * k + 1]));
    }
  }
}

}  // namespace lg::qwen::dev
