// Weight preparation on the device: fp32 -> bf16 conversion after upload and the (gate, up) row
// interleave of the SwiGLU GEMM. (Random weights for `lg bench` come from runtime/cuda/fill.h.)
#pragma once

#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

__global__ void f32_to_bf16_kernel(const float* __restrict__ src, size_t n, bf16* __restrict__ dst) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16(src[i]);
}

/// dst rows 2i / 2i+1 = gate row i / up row i; each row has K elements. Grid-stride over 16-byte
/// chunks.
__global__ void interleave_rows_kernel(const uint4* __restrict__ gate, const uint4* __restrict__ up, size_t rows,
                                       size_t chunks_per_row, uint4* __restrict__ dst) {
  const size_t total = rows * chunks_per_row;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = i / chunks_per_row, c = i % chunks_per_row;
    dst[(2 * r) * chunks_per_row + c] = gate[i];
    dst[(2 * r + 1) * chunks_per_row + c] = up[i];
  }
}

}  // namespace lg::qwen::dev
