// The compiled lane's runtime kernels, outside the emitted program: constant fills and bf16
// widening at load time, and the greedy argmax of a logits row (the token of a greedy step is all
// the host needs: 4 bytes back instead of the row, 600 KB for Qwen's 151,936 logits). Random
// weights come from runtime/cuda/fill.h, shared with the hand-written lane.
#include "lanes/compiled/device_ops.h"

#include <cstdint>

#include "kernels/device_helpers.cuh"
#include "runtime/cuda/cuda_check.h"

namespace lg::compiled {

namespace {

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

// One block a row: each thread scans a strided slice in increasing index order (so within a thread
// the first of equal values stays), then a shared-memory tree picks the largest value, the lowest
// index on ties (as std::max_element on the host). The slice is read as float4 with kArgmaxLoads
// loads in flight a thread when the row is 16-byte aligned: the one-block scan of Qwen's 151,936
// logits took 64.5 us as scalar loads, one at a time a thread, and takes 19.3 us so (Nsight
// Compute, 8B decode step, bench/RESULTS.md, session 19), against the LM head's 300 us. Launched with programmatic
// dependent launch (lg_wait_previous_launch) so its launch overlaps the LM head's tail.
constexpr int kArgmaxThreads = 1024;
constexpr int kArgmaxLoads = 4;
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* rows_x, long n, int* rows_out) {
  // Block b takes row b.
  const float* x = rows_x + static_cast<long>(blockIdx.x) * n;
  int* out = rows_out + blockIdx.x;
  __shared__ float sv[kArgmaxThreads];
  __shared__ int si[kArgmaxThreads];
  float best = -__int_as_float(0x7f800000);
  int bi = 0x7fffffff;
  auto take = [&](float v, long i) { lg_argmax_take(best, bi, v, static_cast<int>(i)); };
  lg_wait_previous_launch();
  const long nt = blockDim.x;
  long tail = 0;  // the first index the scalar loop takes
  if (reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const long n4 = n / 4;
    for (long k0 = threadIdx.x; k0 < n4; k0 += kArgmaxLoads * nt) {
      float4 v[kArgmaxLoads];
#pragma unroll
      for (int u = 0; u < kArgmaxLoads; ++u)
        if (k0 + u * nt < n4) v[u] = x4[k0 + u * nt];
#pragma unroll
      for (int u = 0; u < kArgmaxLoads; ++u) {
        const long k = k0 + u * nt;
        if (k >= n4) break;
        take(v[u].x, 4 * k);
        take(v[u].y, 4 * k + 1);
        take(v[u].z, 4 * k + 2);
        take(v[u].w, 4 * k + 3);
      }
    }
    tail = 4 * n4;
  }
  for (long i = tail + threadIdx.x; i < n; i += nt) take(x[i], i);
  sv[threadIdx.x] = best;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) lg_argmax_take(sv[threadIdx.x], si[threadIdx.x], sv[threadIdx.x + o], si[threadIdx.x + o]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = si[0] == 0x7fffffff ? 0 : si[0];
}

unsigned grid_for(size_t n) {
  const size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b == 0 ? 1 : (b < 8192 ? b : 8192));
}

}  // namespace

void fill_f32(float* dst, size_t n, float value, cudaStream_t s) {
  fill_f32_kernel<<<grid_for(n), 256, 0, s>>>(dst, n, value);
  LG_CUDA_CHECK_LAUNCH();
}

void widen_bf16(const uint16_t* src, size_t n, float* dst, cudaStream_t s) {
  widen_bf16_kernel<<<grid_for(n), 256, 0, s>>>(src, n, dst);
  LG_CUDA_CHECK_LAUNCH();
}

void argmax(const float* x, long n, int* out, cudaStream_t s, int rows, bool pdl) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(rows));
  cfg.blockDim = dim3(kArgmaxThreads);
  cfg.stream = s;
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  LG_CUDA_CHECK(cudaLaunchKernelEx(&cfg, argmax_kernel, x, n, out));
}

}  // namespace lg::compiled
