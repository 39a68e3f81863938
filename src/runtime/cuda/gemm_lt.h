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

/// Whether LtGemm::matmul_split can cut K into S slices: S >= 1 dividing K into slices of a
/// multiple of 8 bf16 values (16-byte aligned rows for the strided batch).
inline bool split_k_fits(int K, int S) { return S >= 1 && K % S == 0 && (K / S) % 8 == 0; }

/// One cuBLASLt handle, a workspace and a cache of chosen algorithms per (T, N, K, slices, output
/// type): the heuristic's first guess (timing its other candidates at the batched decode's shapes
/// gained nothing on the H200: bench/RESULTS.md, "Batched decode").
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

  /// out = in @ W^T rounded to bf16 (fp32 accumulation): in bf16 [T, K], W bf16 [N, K], out bf16
  /// [T, N], row-major. Half matmul's output bytes, for a product that one elementwise kernel
  /// reads next (the hand-written lane's gate/up before its SwiGLU). Throws as matmul does.
  void matmul_bf16(const __nv_bfloat16* in, const __nv_bfloat16* W, __nv_bfloat16* out, int T, int N, int K,
                   cudaStream_t stream);

  /// Split-K without a reduction: parts[s] = in[:, s*K/S : (s+1)*K/S] @ W[:, same]^T for s < S,
  /// one strided-batched GEMM; parts f32 [S, T, N], row-major. The caller sums the S partials where
  /// it reads the product next (the batched decode's RMSNorm after o_proj and down), which saves
  /// the separate reduce kernel cuBLASLt's own split-K launches and lets S be chosen where the
  /// heuristic's pick streams the weights slowly: at T = 16, o_proj 12.97 -> 10.54 us with S = 4,
  /// down 31.7 -> 26.0 us with S = 3 (bench/RESULTS.md, eleventh session). Throws lg::Error
  /// unless split_k_fits(K, S), or when cuBLASLt has no algorithm or fails.
  void matmul_split(const __nv_bfloat16* in, const __nv_bfloat16* W, float* parts, int T, int N, int K, int S,
                    cudaStream_t stream);

  /// out = residual + in @ W^T, with residual f32 [T, N] another buffer (cuBLASLt's C != D): a
  /// residual add whose result is a new value, as the compiled lane's SSA buffers are.
  void matmul_add(const __nv_bfloat16* in, const __nv_bfloat16* W, const float* residual, float* out, int T, int N,
                  int K, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The bf16 tensor-core rate in FLOP/s that cuBLASLt reaches on an n x n x n GEMM (bf16 random
/// operands, fp32 accumulation and output; 2 n^3 FLOPs a call): the best of `reps` calls timed
/// with events, after 2 warm-up calls. The compute floor `lg bench` divides a step's FLOPs by.
/// Throws lg::Error without a device or when cuBLASLt fails.
double measure_bf16_tensor_rate(int n = 8192, int reps = 5);

}  // namespace lg::cuda
