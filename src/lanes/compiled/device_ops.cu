// The compiled lane's runtime kernels, outside the emitted program: weight fills and widening at
// load time, and the greedy argmax of a logits row (the token of a decode step is all the host
// needs; copying 150k logits per step would cost more than a small model's whole step).
// Random weights (`lg bench --shape qwen3-8b --lane compiled`) come from a counter-based hash per
// element, so any tensor fills in one pass and the values depend only on (seed, element index).
#include "lanes/compiled/device_ops.h"

#include "runtime/cuda/cuda_check.h"

namespace lg::compiled {

namespace {

__device__ __forceinline__ uint32_t mix(uint64_t x) {
  // splitmix64's finaliser: every input bit reaches every output bit.
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>((x ^ (x >> 31)) >> 32);
}

__global__ void fill_uniform_bf16_kernel(uint16_t* dst, size_t n, uint64_t seed, float amplitude) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(mix(seed + i)) * (1.0f / 4294967296.0f);  // [0, 1)
    const float v = (2.f * u - 1.f) * amplitude;
    dst[i] = static_cast<uint16_t>(__float_as_uint(v) >> 16);  // truncation: any bf16 in range will do
  }
}

__global__ void fill_f32_kernel(float* dst, size_t n, float value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

__global__ void widen_bf16_kernel(const uint16_t* src, size_t n, float* dst) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = __uint_as_float(static_cast<uint32_t>(src[i]) << 16);
}

// One block: each thread scans a strided slice, then a shared-memory tree picks the largest value,
// the lowest index on ties (as std::max_element on the host).
constexpr int kArgmaxThreads = 1024;
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* x, long n, int* out) {
  __shared__ float sv[kArgmaxThreads];
  __shared__ int si[kArgmaxThreads];
  float best = -__int_as_float(0x7f800000);
  int bi = 0x7fffffff;
  for (long i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    if (v > best || (v == best && i < bi) || (bi == 0x7fffffff && v == v)) {
      best = v;
      bi = static_cast<int>(i);
    }
  }
  sv[threadIdx.x] = best;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) {
      const float v = sv[threadIdx.x + o];
      const int i = si[threadIdx.x + o];
      if (v > sv[threadIdx.x] || (v == sv[threadIdx.x] && i < si[threadIdx.x])) {
        sv[threadIdx.x] = v;
        si[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = si[0] == 0x7fffffff ? 0 : si[0];
}

unsigned grid_for(size_t n) {
  const size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b == 0 ? 1 : (b < 8192 ? b : 8192));
}

}  // namespace

void fill_uniform_bf16(uint16_t* dst, size_t n, uint64_t seed, float amplitude, cudaStream_t s) {
  fill_uniform_bf16_kernel<<<grid_for(n), 256, 0, s>>>(dst, n, seed, amplitude);
  LG_CUDA_CHECK_LAUNCH();
}

void fill_f32(float* dst, size_t n, float value, cudaStream_t s) {
  fill_f32_kernel<<<grid_for(n), 256, 0, s>>>(dst, n, value);
  LG_CUDA_CHECK_LAUNCH();
}

void widen_bf16(const uint16_t* src, size_t n, float* dst, cudaStream_t s) {
  widen_bf16_kernel<<<grid_for(n), 256, 0, s>>>(src, n, dst);
  LG_CUDA_CHECK_LAUNCH();
}

void argmax(const float* x, long n, int* out, cudaStream_t s) {
  argmax_kernel<<<1, kArgmaxThreads, 0, s>>>(x, n, out);
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::compiled
