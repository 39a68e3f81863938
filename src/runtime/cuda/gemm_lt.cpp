#include "runtime/cuda/gemm_lt.h"

#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"

namespace lg::cuda {

namespace {

void lt_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLASLt: ") + what + " failed with status " + std::to_string(static_cast<int>(st)));
}

constexpr size_t kWorkspaceBytes = 32u << 20;  // what cuBLAS recommends for Hopper

}  // namespace

struct LtGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  cuda::DeviceBuffer workspace{kWorkspaceBytes};
  // Row-major out[T,N] = in[T,K] W[N,K]^T is, column-major, out^T[N,T] = W^T(op T) in^T: m = N,
  // n = T, k = K with A = W (transposed) and B = in.
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  std::map<std::tuple<int, int, int, int, bool>, Plan> plans;

  /// The plan of out = in @ W^T, or with S > 1 of its S slices of K as a strided batch (a slice
  /// of A and B starts K/S elements after the last, keeping ld = K; C's partials are T * N apart);
  /// out f32, or bf16 with bf16_out (fp32 accumulation and scaling either way).
  Plan& plan(int T, int N, int K, int S = 1, bool bf16_out = false) {
    auto key = std::make_tuple(T, N, K, S, bf16_out);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    lt_check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
    lt_check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
    const int ks = K / S;
    lt_check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, ks, N, K), "layout A");
    lt_check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, ks, T, K), "layout B");
    lt_check(cublasLtMatrixLayoutCreate(&p.c, bf16_out ? CUDA_R_16BF : CUDA_R_32F, N, T, N), "layout C");
    if (S > 1) {
      const int32_t count = S;
      const int64_t step_ab = ks, step_c = static_cast<int64_t>(T) * N;
      for (cublasLtMatrixLayout_t l : {p.a, p.b, p.c})
        lt_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                 "set batch count");
      lt_check(cublasLtMatrixLayoutSetAttribute(p.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &step_ab,
                                                sizeof step_ab), "set batch offset A");
      lt_check(cublasLtMatrixLayoutSetAttribute(p.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &step_ab,
                                                sizeof step_ab), "set batch offset B");
      lt_check(cublasLtMatrixLayoutSetAttribute(p.c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &step_c,
                                                sizeof step_c), "set batch offset C");
    }
    cublasLtMatmulPreference_t pref = nullptr;
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    size_t ws = kWorkspaceBytes;
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             "set workspace");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    lt_check(st, "AlgoGetHeuristic");
    if (found == 0)
      throw Error("cuBLASLt: no algorithm for bf16 GEMM T=" + std::to_string(T) + " N=" + std::to_string(N) +
                  " K=" + std::to_string(K) + (S > 1 ? " in " + std::to_string(S) + " slices" : "") +
                  (bf16_out ? " with a bf16 output" : ""));
    p.algo = result.algo;
    return plans.emplace(key, p).first->second;
  }
};

LtGemm::LtGemm() : impl_(std::make_unique<Impl>()) { lt_check(cublasLtCreate(&impl_->handle), "cublasLtCreate"); }

LtGemm::~LtGemm() {
  for (auto& [key, p] : impl_->plans) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (impl_->handle) cublasLtDestroy(impl_->handle);
}

void LtGemm::matmul(const __nv_bfloat16* in, const __nv_bfloat16* W, float* out, int T, int N, int K,
                    bool accumulate, cudaStream_t stream) {
  Impl::Plan& p = impl_->plan(T, N, K);
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  lt_check(cublasLtMatmul(impl_->handle, p.op, &alpha, W, p.a, in, p.b, &beta, out, p.c, out, p.c, &p.algo,
                          impl_->workspace.data(), kWorkspaceBytes, stream),
           "Matmul");
  note_untriggered_launch(stream);
}

void LtGemm::matmul_bf16(const __nv_bfloat16* in, const __nv_bfloat16* W, __nv_bfloat16* out, int T, int N, int K,
                         cudaStream_t stream) {
  Impl::Plan& p = impl_->plan(T, N, K, 1, true);
  const float alpha = 1.f, beta = 0.f;
  lt_check(cublasLtMatmul(impl_->handle, p.op, &alpha, W, p.a, in, p.b, &beta, out, p.c, out, p.c, &p.algo,
                          impl_->workspace.data(), kWorkspaceBytes, stream),
           "Matmul (bf16 output)");
  note_untriggered_launch(stream);
}

void LtGemm::matmul_split(const __nv_bfloat16* in, const __nv_bfloat16* W, float* parts, int T, int N, int K, int S,
                          cudaStream_t stream) {
  if (!split_k_fits(K, S))
    throw Error("cuBLASLt: split-K of K=" + std::to_string(K) + " into " + std::to_string(S) +
                " slices needs slices of a multiple of 8");
  Impl::Plan& p = impl_->plan(T, N, K, S);
  const float alpha = 1.f, beta = 0.f;
  lt_check(cublasLtMatmul(impl_->handle, p.op, &alpha, W, p.a, in, p.b, &beta, parts, p.c, parts, p.c, &p.algo,
                          impl_->workspace.data(), kWorkspaceBytes, stream),
           "Matmul (split-K slices)");
  note_untriggered_launch(stream);
}

void LtGemm::matmul_add(const __nv_bfloat16* in, const __nv_bfloat16* W, const float* residual, float* out, int T,
                        int N, int K, cudaStream_t stream) {
  Impl::Plan& p = impl_->plan(T, N, K);
  const float alpha = 1.f, beta = 1.f;
  lt_check(cublasLtMatmul(impl_->handle, p.op, &alpha, W, p.a, in, p.b, &beta, residual, p.c, out, p.c, &p.algo,
                          impl_->workspace.data(), kWorkspaceBytes, stream),
           "Matmul (C != D)");
  note_untriggered_launch(stream);
}

double measure_bf16_tensor_rate(int n, int reps) {
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  DeviceBuffer a(nn * 2), w(nn * 2), out(nn * 4);
  Stream s;
  fill_uniform_bf16(a.as<__nv_bfloat16>(), nn, 1, 1.f, s.get());
  fill_uniform_bf16(w.as<__nv_bfloat16>(), nn, 2, 1.f, s.get());
  LtGemm gemm;
  for (int i = 0; i < 2; ++i) gemm.matmul(a.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), out.as<float>(), n, n, n, false, s.get());
  double best_ms = 0;
  for (int i = 0; i < reps; ++i) {
    Event e0, e1;
    e0.record(s.get());
    gemm.matmul(a.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), out.as<float>(), n, n, n, false, s.get());
    e1.record(s.get());
    const double ms = e1.elapsed_ms_since(e0);
    if (i == 0 || ms < best_ms) best_ms = ms;
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / (best_ms / 1e3);
}

}  // namespace lg::cuda
