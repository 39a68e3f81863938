// Prefill GEMMs on the tensor cores through cuBLASLt: out[T, N] (+)= in[T, K] @ W[N, K]^T with bf16
// operands, fp32 accumulation and an fp32 output, so the residual add (beta = 1 into the fp32
// residual stream) rides in the GEMM. Shared by the hand-written lane (prefill) and the compiled lane
// (GEMM stages at T > 1, see emit/cuda/program.h): cuBLASLt's sm_90 kernels are the bar emitted
// tensor-core GEMMs would have to beat.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

namespace lg::cuda {

/// One cuBLASLt handle, a workspace and a cache of chosen algorithms per (T, N, K, accumulate).
class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  /// out = in @ W^T (accumulate: out += in @ W^T). in bf16 [T, K], W bf16 [N, K], out f32 [T, N],
  /// all row-major and contiguous. Throws lg::Error when cuBLASLt has no algorithm or fails.
  void matmul(const __nv_bfloat16* in, const __nv_bfloat16* W, float* out, int T, int N, int K, bool accumulate,
              cudaStream_t stream);

  /// out = residual + in @ W^T, with residual f32 [T, N] another buffer (cuBLASLt's C != D): a
  /// residual add whose result is a new value, as the compiled lane's SSA buffers are.
  void matmul_add(const __nv_bfloat16* in, const __nv_bfloat16* W, const float* residual, float* out, int T, int N,
                  int K, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lg::cuda
