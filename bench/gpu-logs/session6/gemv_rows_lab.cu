// Lab: launch_gemv_rows's kernel alone at 8B shapes: T, carveout, to find why it streams W at ~1.8 TB/s.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "lanes/qwen/kernels/gemv_rows.cuh"
using namespace lg::qwen;
using namespace lg::qwen::dev;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

template <int NT, GemvRowsOutput OUT>
float run(const char* name, int N, int K, int T, int splits, int bps, int carve, int layers, bf16* W, bf16* x, float* of, bf16* ob) {
  GemvRowsParams p;
  p.x = reinterpret_cast<const uint4*>(x); p.out_f32 = of; p.out_bf16 = ob; p.N = N; p.nc = K / 8; p.T = T; p.tiles = N / 16;
  p.splits = splits;
  p.split_chunks = ((p.nc + splits - 1) / splits + 3) / 4 * 4;
  p.splits = (p.nc + p.split_chunks - 1) / p.split_chunks;
  int items = p.tiles * p.splits;
  int blocks = std::max(1, std::min((items + kRowsWarps - 1) / kRowsWarps, 132 * bps));
  auto k = gemv_rows_kernel<NT, OUT>;
  if (carve >= 0) CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, carve));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  size_t wsz = size_t(N) * K;
  for (int rep = 0; rep < 2; ++rep) {
    cudaEventRecord(a);
    for (int l = 0; l < layers; ++l) { p.W = reinterpret_cast<const uint4*>(W + wsz * l); k<<<blocks, kRowsThreads>>>(p); }
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
  }
  float ms; cudaEventElapsedTime(&ms, a, b);
  double us = ms * 1000 / layers;
  printf("%-8s N=%5d K=%5d T=%2d splits=%d bps=%d carve=%4d: %7.1f us/launch  %5.2f TB/s of W\n", name, N, K, T, p.splits, bps, carve, us,
         wsz * 2 / (us * 1e-6) / 1e12);
  return us;
}

int main() {
  const int layers = 36;
  size_t maxw = size_t(24576) * 4096;
  bf16 *W, *x, *ob; float* of;
  CK(cudaMalloc(&W, maxw * 2 * layers)); CK(cudaMemset(W, 0, maxw * 2 * layers));
  CK(cudaMalloc(&x, 16 * 12288 * 2)); CK(cudaMemset(x, 0, 16 * 12288 * 2));
  CK(cudaMalloc(&of, 16 * 24576 * 4)); CK(cudaMalloc(&ob, 16 * 24576 * 2));
  for (int carve : {-1, 0, 100}) {
    for (int T : {1, 8, 16}) {
      if (T <= 8) {
        run<1, GemvRowsOutput::kSwiGLU>("gateup", 24576, 4096, T, 1, 4, carve, layers, W, x, of, ob);
        run<1, GemvRowsOutput::kResidual>("down", 4096, 12288, T, 8, 4, carve, layers, W, x, of, ob);
        run<1, GemvRowsOutput::kStore>("qkv", 6144, 4096, T, 1, 4, carve, layers, W, x, of, ob);
      } else {
        run<2, GemvRowsOutput::kSwiGLU>("gateup", 24576, 4096, T, 1, 4, carve, layers, W, x, of, ob);
        run<2, GemvRowsOutput::kResidual>("down", 4096, 12288, T, 8, 4, carve, layers, W, x, of, ob);
        run<2, GemvRowsOutput::kStore>("qkv", 6144, 4096, T, 1, 4, carve, layers, W, x, of, ob);
      }
    }
  }
  for (int bps : {1, 2, 3})
    run<2, GemvRowsOutput::kSwiGLU>("gateup", 24576, 4096, 16, 1, bps, -1, layers, W, x, of, ob);
  return 0;
}
