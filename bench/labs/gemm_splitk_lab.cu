// Lab (issue 13): the batched decode step's projections at M = 16..128 rows, cuBLASLt's own choice
// (the lane's LtGemm: heuristic top-1, beta = 1 into the fp32 residual) against split-K done by
// hand as a strided-batched GEMM: S slices of K, each writing its fp32 partial [S][M][N] with
// beta = 0, so no reduce kernel runs and the partials' sum can ride in the kernel that reads the
// output next (the RMSNorm after o_proj and down). Timed as the step runs them: a CUDA graph of 36
// calls on 36 distinct weight copies (no L2 reuse across calls), replayed; us per call and the
// weights' TB/s. It also checks each split form's partial sum against the baseline's output.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 bench/labs/gemm_splitk_lab.cu -lcublasLt -o gemm_splitk_lab
// Run:   ./gemm_splitk_lab [M list, default 16,32,64,128]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lab_common.cuh"

#define LT(x)                                                                   \
  do {                                                                          \
    cublasStatus_t s_ = (x);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                          \
      std::fprintf(stderr, "%s:%d cublasLt status %d\n", __FILE__, __LINE__, (int)s_); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

constexpr size_t kWs = 32u << 20;
constexpr int kLayers = 36;

struct Gemm {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
};

// out[S][M][N] (f32) = in[M, K] @ W[N, K]^T split over S slices of K (S = 1: one plain GEMM).
Gemm make(cublasLtHandle_t h, int M, int N, int K, int S, int want) {
  Gemm g;
  LT(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const int ks = K / S;
  LT(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, ks, N, K));
  LT(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, ks, M, K));
  LT(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_32F, N, M, N));
  if (S > 1) {
    int32_t cnt = S;
    int64_t sa = ks, sb = ks, sc = (int64_t)M * N;
    for (auto* l : {&g.a, &g.b, &g.c})
      LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof cnt));
    LT(cublasLtMatrixLayoutSetAttribute(g.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa));
    LT(cublasLtMatrixLayoutSetAttribute(g.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb));
    LT(cublasLtMatrixLayoutSetAttribute(g.c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof sc));
  }
  cublasLtMatmulPreference_t pref{};
  LT(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWs;
  LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  g.algos.resize(want);
  int found = 0;
  LT(cublasLtMatmulAlgoGetHeuristic(h, g.op, g.a, g.b, g.c, g.c, pref, want, g.algos.data(), &found));
  g.algos.resize(found);
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

int main(int argc, char** argv) {
  std::vector<int> Ms = {16, 32, 64, 128};
  if (argc > 1) {
    Ms.clear();
    std::stringstream ss(argv[1]);
    std::string t;
    while (std::getline(ss, t, ',')) Ms.push_back(std::atoi(t.c_str()));
  }
  struct Shape { const char* name; int N, K; std::vector<int> splits; };
  // Qwen3-8B: hidden 4096, 32 q heads + 8 kv heads of 128, intermediate 12288.
  const std::vector<Shape> shapes = {{"qkv", 6144, 4096, {1, 2, 4, 8}},
                                     {"o_proj", 4096, 4096, {1, 2, 4, 8}},
                                     {"gate/up", 24576, 4096, {1, 2}},
                                     {"down", 4096, 12288, {1, 2, 3, 4, 6, 8}}};
  cublasLtHandle_t h;
  LT(cublasLtCreate(&h));
  void* ws;
  CK(cudaMalloc(&ws, kWs));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int Mmax = *std::max_element(Ms.begin(), Ms.end());
  for (const Shape& sh : shapes) {
    const size_t wn = (size_t)sh.N * sh.K;
    __nv_bfloat16 *W, *x;
    CK(cudaMalloc(&W, wn * 2 * kLayers));
    CK(cudaMalloc(&x, (size_t)Mmax * sh.K * 2));
    fill_bf16<<<1024, 256, 0, st>>>(W, wn * kLayers, 1);
    fill_bf16<<<64, 256, 0, st>>>(x, (size_t)Mmax * sh.K, 2);
    float *out, *part;
    CK(cudaMalloc(&out, (size_t)Mmax * sh.N * 4));
    CK(cudaMalloc(&part, (size_t)8 * Mmax * sh.N * 4));
    for (int M : Ms) {
      std::vector<float> ref;
      for (int S : sh.splits) {
        Gemm g = make(h, M, sh.N, sh.K, S, 8);
        const float alpha = 1.f, beta = S == 1 ? 1.f : 0.f;  // S = 1 is the lane's form: += into the residual
        float* dst = S == 1 ? out : part;
        double best_us = 1e30;
        int best_i = -1;
        for (size_t ai = 0; ai < g.algos.size(); ++ai) {
          auto call = [&](int l) {
            return cublasLtMatmul(h, g.op, &alpha, W + wn * l, g.a, x, g.b, &beta, dst, g.c, dst, g.c,
                                  &g.algos[ai].algo, ws, kWs, st);
          };
          if (call(0) != CUBLAS_STATUS_SUCCESS) continue;
          cudaGraph_t graph;
          cudaGraphExec_t exec;
          CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
          for (int l = 0; l < kLayers; ++l) LT(call(l));
          CK(cudaStreamEndCapture(st, &graph));
          CK(cudaGraphInstantiate(&exec, graph, 0));
          CK(cudaGraphLaunch(exec, st));
          cudaEvent_t e0, e1;
          CK(cudaEventCreate(&e0));
          CK(cudaEventCreate(&e1));
          const int reps = 10;
          CK(cudaEventRecord(e0, st));
          for (int r = 0; r < reps; ++r) CK(cudaGraphLaunch(exec, st));
          CK(cudaEventRecord(e1, st));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          const double us = ms * 1e3 / (reps * kLayers);
          if (ai == 0)
            std::printf("%-8s M=%3d S=%d heuristic #0: %7.2f us %5.2f TB/s\n", sh.name, M, S, us, wn * 2 / us / 1e6);
          if (us < best_us) best_us = us, best_i = (int)ai;
          cudaGraphExecDestroy(exec);
          cudaGraphDestroy(graph);
          cudaEventDestroy(e0);
          cudaEventDestroy(e1);
        }
        std::printf("%-8s M=%3d S=%d best of %zu: #%d %7.2f us %5.2f TB/s\n", sh.name, M, S, g.algos.size(), best_i,
                    best_us, wn * 2 / best_us / 1e6);
        // Agreement: one call of the heuristic's pick on layer 0's weights.
        const float one = 1.f, zero = 0.f;
        LT(cublasLtMatmul(h, g.op, &one, W, g.a, x, g.b, &zero, dst, g.c, dst, g.c, &g.algos[0].algo, ws, kWs, st));
        std::vector<float> got((size_t)S * M * sh.N);
        CK(cudaMemcpyAsync(got.data(), dst, got.size() * 4, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        std::vector<float> sum((size_t)M * sh.N, 0.f);
        for (int s = 0; s < S; ++s)
          for (size_t i = 0; i < sum.size(); ++i) sum[i] += got[(size_t)s * M * sh.N + i];
        if (S == 1) {
          ref = sum;
        } else {
          double num = 0, den = 0;
          for (size_t i = 0; i < sum.size(); ++i) num = std::max(num, (double)std::fabs(sum[i] - ref[i])), den = std::max(den, (double)std::fabs(ref[i]));
          std::printf("%-8s M=%3d S=%d partial sum vs S=1: max abs diff %.3g (max |ref| %.3g)\n", sh.name, M, S, num, den);
        }
        cublasLtMatrixLayoutDestroy(g.a);
        cublasLtMatrixLayoutDestroy(g.b);
        cublasLtMatrixLayoutDestroy(g.c);
        cublasLtMatmulDescDestroy(g.op);
      }
    }
    CK(cudaFree(W));
    CK(cudaFree(x));
    CK(cudaFree(out));
    CK(cudaFree(part));
  }
  std::printf("done\n");
  return 0;
}
