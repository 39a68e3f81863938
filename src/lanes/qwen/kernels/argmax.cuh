// Greedy sampling on the device: index of the largest logit, lowest index on a tie (the Lane
// contract, and what torch.argmax returns). One block; NaN logits are never chosen.
#pragma once



#include "lanes/qwen/kernels/common.cuh"

namespace lg::qwen::dev {

constexpr int kArgmaxThreads = 1024;

__device__ __forceinline__ void better(float& bv, int& bi, float v, int i) {
  if (v > bv || (v == bv && i < bi)) {
    bv = v;
    bi = i;
  }
}

__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* __restrict__ logits, int V,
                                                                int* __restrict__ out) {
  __shared__ float s_v[32];
  __shared__ int s_i[32];
  float bv = kNegInf;
  int bi = 0x7fffffff;
  for (int i = threadIdx.x; i < V; i += blockDim.x) better(bv, bi, logits[i], i);  // NaN > x is false
  for (int o = 16; o > 0; o >>= 1) better(bv, bi, __shfl_xor_sync(0xffffffffu, bv, o), __shfl_xor_sync(0xffffffffu, bi, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_v[warp] = bv;
    s_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) better(bv, bi, s_v[w], s_i[w]);
    *out = bi == 0x7fffffff ? 0 : bi;
  }
}

}  // namespace lg::qwen::dev
