// Argmax of each row of the logits of a batched step (the LM head by cuBLASLt at B > 1; at B == 1
// the GEMV's epilogue finds it, gemv.cuh). One block per row. Lowest index wins a tie (the Lane
// contract, torch.argmax); NaN never wins; a row of NaN gives 0, as the GEMV's epilogue does.
#pragma once

#include <climits>

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kArgmaxThreads = 256;

/// out[b] = argmax(logits[b, 0 .. V-1]); grid B blocks of kArgmaxThreads. `out` may be mapped
/// host memory.
__global__ void __launch_bounds__(kArgmaxThreads) argmax_rows_kernel(const float* __restrict__ logits, int V,
                                                                     int* out) {
  __shared__ float s_v[kArgmaxThreads / 32];
  __shared__ int s_i[kArgmaxThreads / 32];
  grid_dependency_wait();  // launched with PDL behind the LM head's GEMM (launch_argmax_rows)
  launch_dependents();
  const float* row = logits + static_cast<size_t>(blockIdx.x) * V;
  float bv = kNegInf;
  int bi = INT_MAX;
  for (int i = threadIdx.x; i < V; i += kArgmaxThreads) lg_argmax_take(bv, bi, row[i], i);
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    lg_argmax_take(bv, bi, ov, oi);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_v[warp] = bv;
    s_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kArgmaxThreads / 32; ++w) lg_argmax_take(bv, bi, s_v[w], s_i[w]);
    out[blockIdx.x] = bi == INT_MAX ? 0 : bi;
  }
}

}  // namespace lg::qwen::dev
