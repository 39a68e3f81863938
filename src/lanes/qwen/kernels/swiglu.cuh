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

/// silu(gate) * up of four (gate, up) pairs, rounded to bf16 and packed in memory order (8 bytes).
__device__ __forceinline__ uint2 silu_mul4(float2 p0, float2 p1, float2 p2, float2 p3) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(silu(p0.x) * p0.y, silu(p1.x) * p1.y);
  const __nv_bfloat162 hi = __floats2bfloat162_rn(silu(p2.x) * p2.y, silu(p3.x) * p3.y);
  return make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
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
    act[i] = silu_mul4({a.x, a.y}, {a.z, a.w}, {b.x, b.y}, {b.z, b.w});
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
      reinterpret_cast<uint2*>(act)[i] = silu_mul4(__bfloat1622float2(p[0]), __bfloat1622float2(p[1]),
                                                   __bfloat1622float2(p[2]), __bfloat1622float2(p[3]));
    } else {
      const size_t k = 4 * n4 + (i - n4);
      act[k] = __float2bfloat16(silu(__bfloat162float(gu[2 * k])) * __bfloat162float(gu[2 * k + 1]));
    }
  }
}

}  // namespace lg::qwen::dev
