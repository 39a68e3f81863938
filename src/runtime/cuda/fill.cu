#include "runtime/cuda/fill.h"

#include "runtime/cuda/cuda_check.h"

namespace lg::cuda {

namespace {

// The murmur3 64-bit finaliser: every input bit reaches every output bit.
__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__global__ void fill_uniform_bf16_kernel(__nv_bfloat16* __restrict__ dst, size_t n, uint64_t seed, float amplitude) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(hash32(seed * 0x9e3779b97f4a7c15ull + i) >> 8) * (1.f / 16777216.f);
    dst[i] = __float2bfloat16((2.f * u - 1.f) * amplitude);
  }
}

}  // namespace

void fill_uniform_bf16(__nv_bfloat16* dst, size_t n, uint64_t seed, float amplitude, cudaStream_t stream) {
  const size_t blocks = (n + 255) / 256;
  fill_uniform_bf16_kernel<<<static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 65536 ? blocks : 65536)), 256, 0,
                             stream>>>(dst, n, seed, amplitude);
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::cuda
