// Lab: a row GEMV for T <= 16 that stages W through shared memory (row-contiguous cp.async, 256 B
// per row per stage, XOR-swizzled) and feeds mma.sync m16n8k16 with ldmatrix; split-K with fp32
// atomics. Times it at the 8B shapes against a plain-read bandwidth kernel, and checks y against a
// naive fp32 reference. Not part of the build: nvcc -O3 -std=c++20 -arch=sm_90 gemv_smem_lab.cu
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
using bf16 = __nv_bfloat16;
constexpr int kWarps = 4, kStages = 4, kRowBytes = 256, kStageBytes = 16 * kRowBytes;  // 128 k per stage

__device__ __forceinline__ void cp_async16(void* s, const void* g) {
  unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(sa), "l"(g));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }
__device__ __forceinline__ void ldsm_x4(unsigned& a0, unsigned& a1, unsigned& a2, unsigned& a3, const void* s) {
  unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(sa));
}
__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// y[t, n] += sum_k x[t, k] W[n, k] over item (tile, split): W [N, K] bf16, x [T, K] bf16, y [T, N] f32 (zeroed).
template <int NT>
__global__ void __launch_bounds__(kWarps * 32, 3) gemv_smem(const bf16* __restrict__ W, const bf16* __restrict__ x, float* y,
                                                            int N, int K, int T, int splits, int kspan) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  unsigned char* my = smem + warp * kStages * kStageBytes;
  const int tiles = N / 16, items = tiles * splits;
  const unsigned* xr[NT];
  for (int item = blockIdx.x * kWarps + warp; item < items; item += gridDim.x * kWarps) {
    const int tile = item % tiles, split = item / tiles;
    const int k_begin = split * kspan, k_end = min(K, k_begin + kspan), nstage = (k_end - k_begin) / 128;
    const char* wbase = reinterpret_cast<const char*>(W + static_cast<size_t>(tile) * 16 * K + k_begin);
    auto issue = [&](int st) {
      if (st < nstage) {
        unsigned char* s = my + (st % kStages) * kStageBytes;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int idx = i * 32 + lane, row = idx >> 4, ch = idx & 15;
          cp_async16(s + row * kRowBytes + ((ch ^ (row & 7)) << 4), wbase + static_cast<size_t>(row) * K * 2 + st * 256 + ch * 16);
        }
      }
      cp_commit();
    };
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st) issue(st);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) xr[nt] = reinterpret_cast<const unsigned*>(x + static_cast<size_t>(min(8 * nt + g, T - 1)) * K);
    float acc[NT][4] = {};
    for (int st = 0; st < nstage; ++st) {
      cp_wait<kStages - 2>();
      __syncwarp();
      const unsigned char* s = my + (st % kStages) * kStageBytes;
      const int kb = k_begin + st * 128;
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        const int m = lane >> 3, row = (m & 1) * 8 + (lane & 7), ch = ks * 2 + (m >> 1);
        unsigned a0, a1, a2, a3;
        ldsm_x4(a0, a1, a2, a3, s + row * kRowBytes + ((ch ^ (row & 7)) << 4));
        const int k0 = kb + ks * 16;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const unsigned b0 = __ldg(xr[nt] + (k0 + 2 * q) / 2), b1 = __ldg(xr[nt] + (k0 + 8 + 2 * q) / 2);
          mma(acc[nt], a0, a1, a2, a3, b0, b1);
        }
      }
      __syncwarp();
      issue(st + kStages - 1);
    }
    cp_wait<0>();
    __syncwarp();
    const int n0 = tile * 16 + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = nt * 8 + 2 * q + (e & 1), n = n0 + (e >> 1) * 8;
        if (t < T) atomicAdd(y + static_cast<size_t>(t) * N + n, acc[nt][e]);
      }
  }
}

__global__ void ref_kernel(const bf16* W, const bf16* x, float* y, int N, int K, int T) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int t = 0; t < T; ++t) {
    float s = 0;
    for (int k = 0; k < K; ++k) s += __bfloat162float(W[static_cast<size_t>(n) * K + k]) * __bfloat162float(x[static_cast<size_t>(t) * K + k]);
    y[static_cast<size_t>(t) * N + n] = s;
  }
}
__global__ void fill(bf16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 65536.f - 0.5f));
  }
}

int main() {
  const int layers = 36;
  const size_t maxw = size_t(24576) * 4096;
  bf16 *W, *x; float *y, *yr;
  CK(cudaMalloc(&W, maxw * 2 * layers)); fill<<<4096, 256>>>(W, maxw * layers, 1);
  CK(cudaMalloc(&x, 16 * 12288 * 2)); fill<<<64, 256>>>(x, 16 * 12288, 7);
  CK(cudaMalloc(&y, 16 * 24576 * 4)); CK(cudaMalloc(&yr, 16 * 24576 * 4));
  const int smem = kWarps * kStages * kStageBytes;
  CK(cudaFuncSetAttribute(gemv_smem<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(gemv_smem<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_smem<2>, kWarps * 32, smem));
  printf("blocks per SM %d, smem %d B per block\n", per_sm, smem);
  struct S { const char* name; int N, K, splits; } shapes[] = {{"gateup", 24576, 4096, 1}, {"down", 4096, 12288, 6}, {"qkv", 6144, 4096, 4}, {"o", 4096, 4096, 6}};
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (auto& sh : shapes)
    for (int T : {1, 8, 16}) {
      const int kspan = (sh.K / sh.splits + 127) / 128 * 128;
      const int items = sh.N / 16 * sh.splits, blocks = std::min((items + kWarps - 1) / kWarps, 132 * per_sm);
      const size_t wsz = size_t(sh.N) * sh.K;
      auto launch = [&](int l) {
        if (T <= 8) gemv_smem<1><<<blocks, kWarps * 32, smem>>>(W + wsz * l, x, y, sh.N, sh.K, T, sh.splits, kspan);
        else gemv_smem<2><<<blocks, kWarps * 32, smem>>>(W + wsz * l, x, y, sh.N, sh.K, T, sh.splits, kspan);
      };
      // correctness on layer 0
      CK(cudaMemset(y, 0, 16 * 24576 * 4)); launch(0); ref_kernel<<<(sh.N + 127) / 128, 128>>>(W, x, yr, sh.N, sh.K, T);
      CK(cudaDeviceSynchronize());
      std::vector<float> h(size_t(T) * sh.N), r(size_t(T) * sh.N);
      CK(cudaMemcpy(h.data(), y, h.size() * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(r.data(), yr, r.size() * 4, cudaMemcpyDeviceToHost));
      double worst = 0, scale = 0; for (size_t i = 0; i < h.size(); ++i) { worst = std::max(worst, (double)std::fabs(h[i] - r[i])); scale = std::max(scale, (double)std::fabs(r[i])); }
      float ms = 0;
      for (int rep = 0; rep < 2; ++rep) {
        cudaEventRecord(a);
        for (int l = 0; l < layers; ++l) launch(l);
        cudaEventRecord(b); CK(cudaEventSynchronize(b));
      }
      cudaEventElapsedTime(&ms, a, b);
      const double us = ms * 1000 / layers;
      printf("%-7s N=%5d K=%5d T=%2d splits=%d: %7.1f us/launch %5.2f TB/s of W; max |err| %.3g of max |y| %.3g\n", sh.name, sh.N, sh.K, T,
             sh.splits, us, wsz * 2 / (us * 1e-6) / 1e12, worst, scale);
    }
  return 0;
}
