// Device helpers of the hand-written Qwen kernels: the block reduction they use, bf16 vector
// unpacking, SiLU. The warp reductions, bf16 widening and the PDL wait are the ones both lanes
// share (src/kernels/device_helpers.cuh, which the compiled lane pastes into every emitted
// program). bf16 everywhere in memory, fp32 in registers (the accumulation precision the fixtures
// and the CPU reference use).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/device_helpers.cuh"

namespace lg::qwen::dev {

using bf16 = __nv_bfloat16;

/// -infinity as a constant usable in host and device code (initial running max of a softmax).
constexpr float kNegInf = -__builtin_huge_valf();

/// Sum over the whole block (blockDim.x a multiple of 32 or smaller than 32); every thread gets
/// the result. `scratch` holds at least 32 floats. Unlike lg_block_sum (device_helpers.cuh) it
/// takes a block of fewer than 32 threads (rope_kv_kernel runs head_dim threads, 16 for some
/// models) and synchronises before writing `scratch` rather than after reading it.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  // A partial warp (blockDim < 32, e.g. head_dim 16) still reduces correctly: inactive lanes do
  // not exist, so mask to the active ones.
  const unsigned mask = blockDim.x >= 32 ? 0xffffffffu : ((1u << blockDim.x) - 1u);
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_xor_sync(mask, v, o);
    if ((lane ^ o) < static_cast<int>(blockDim.x)) v += other;
  }
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < nwarps; ++w) total += scratch[w];
  return total;
}

/// Dot product of 8 bf16 weights (one 16-byte load) with 8 bf16 inputs, in fp32.
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x) {
  const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&x);
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 a = __bfloat1622float2(wp[i]);
    float2 b = __bfloat1622float2(xp[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

__device__ __forceinline__ float silu(float g) { return g / (1.f + __expf(-g)); }

}  // namespace lg::qwen::dev
