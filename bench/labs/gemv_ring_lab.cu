// Lab (issue 16; session 22): a one-row decode GEMV y = W x (W bf16 [N, K] row-major, x and y f32)
// whose weight stream goes through a ring in shared memory filled by cp.async, against the
// emitted kernel's form (a warp an output row, batches of 4 16-byte loads a lane in registers).
// Session 22's Nsight put 30B-A3B's q/k/v and o_proj GEMVs at ~2 TB/s with 2 KB in flight a warp,
// and deeper register batches lost at every shape (RESULTS, call 10): the ring holds the bytes in
// flight in shared memory instead (STAGES x 64 bytes a thread), at no register cost.
//
// Ring form: a block takes a contiguous range of whole rows, i.e. a contiguous byte range of W,
// and streams it in chunks of 16 KB (1,024 pieces of 16 bytes; a thread's 4 pieces a chunk). Each
// thread cp.async's its own pieces STAGES chunks ahead and reads back only what it copied, so no
// barrier is needed: the ring is a per-thread prefetch buffer. With K % 1,024 == 0 a warp's 128
// pieces of a chunk lie in one row; its partial sum goes to y[row] by one atomicAdd (y zeroed
// first; the order of the few adds a row is not fixed: a lab, not the lane's form).
//
// Timed as a step runs them: L launches in a row, each on its own weight copy (L copies > 2x L2,
// no reuse), us a launch and the weights' TB/s; checked against a double-precision reference.
//
// A third form streams through the bulk-copy engine (gemv_bulk below). Result (H200, bench/RESULTS.md,
// session 22, call 11): the register form is the quickest at every decode shape measured; the
// per-thread ring runs at half its rate, the bulk ring at 0.7-0.95 of it.
//
// Build (from the repository root; it includes src/kernels/device_helpers.cuh, the lanes' own
// bf16 widening, streaming load and warp sum): nvcc -O3 -std=c++17 -arch=sm_90 bench/labs/gemv_ring_lab.cu -o gemv_ring_lab
// Run:   ./gemv_ring_lab
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../src/kernels/device_helpers.cuh"  // lg_bf16_lo/hi, lg_ld_stream, lg_warp_sum
#include "lab_common.cuh"


__device__ __forceinline__ float dot8(uint4 w, float4 a, float4 b) {
  return a.x * lg_bf16_lo(w.x) + a.y * lg_bf16_hi(w.x) + a.z * lg_bf16_lo(w.y) + a.w * lg_bf16_hi(w.y) +
         b.x * lg_bf16_lo(w.z) + b.y * lg_bf16_hi(w.z) + b.z * lg_bf16_lo(w.w) + b.w * lg_bf16_hi(w.w);
}

// The emitted form: a warp an output row, D loads of 16 bytes a lane in flight, x staged in
// shared memory (as the decode GEMV stages its activation row).
template <int D>
__global__ void __launch_bounds__(256) gemv_regs(const __nv_bfloat16* __restrict__ W, const float* __restrict__ x,
                                                 float* __restrict__ y, int N, int K) {
  extern __shared__ float4 xs[];
  for (int i = threadIdx.x; i < K / 4; i += blockDim.x) xs[i] = reinterpret_cast<const float4*>(x)[i];
  __syncthreads();
  const int lane = threadIdx.x & 31, K8 = K / 8;
  for (long row = (long)blockIdx.x * 8 + (threadIdx.x >> 5); row < N; row += (long)gridDim.x * 8) {
    const uint4* wr = reinterpret_cast<const uint4*>(W + row * K);
    float acc = 0.f;
    for (int c0 = lane; c0 < K8; c0 += 32 * D) {
      uint4 w[D];
#pragma unroll
      for (int u = 0; u < D; ++u)
        if (c0 + 32 * u < K8) w[u] = lg_ld_stream(wr + c0 + 32 * u);
#pragma unroll
      for (int u = 0; u < D; ++u)
        if (c0 + 32 * u < K8) acc += dot8(w[u], xs[2 * (c0 + 32 * u)], xs[2 * (c0 + 32 * u) + 1]);
    }
    acc = lg_warp_sum(acc);
    if (lane == 0) y[row] = acc;
  }
}

// The ring form (see the file comment). Dynamic shared memory: x (K floats), then the ring:
// STAGES chunks of 256 threads x 4 pieces x 16 bytes.
template <int STAGES>
__global__ void __launch_bounds__(256) gemv_ring(const __nv_bfloat16* __restrict__ W, const float* __restrict__ x,
                                                 float* __restrict__ y, int N, int K) {
  extern __shared__ float4 smem[];
  float4* xs = smem;
  uint4* ring = reinterpret_cast<uint4*>(smem + K / 4);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long K8 = K / 8;
  const long r0 = (long)N * blockIdx.x / gridDim.x, r1 = (long)N * (blockIdx.x + 1) / gridDim.x;
  const long p0 = r0 * K8, p1 = r1 * K8;  // the block's pieces (16 bytes each) of W
  const long chunks = (p1 - p0 + 1023) / 1024;
  const uint4* wp = reinterpret_cast<const uint4*>(W);
  // Piece u of thread t in chunk c: p0 + c * 1024 + warp * 128 + u * 32 + lane.
  auto issue = [&](long c) {
    if (c < chunks) {
      uint4* slot = ring + (c % STAGES) * 1024 + t * 4;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const long p = p0 + c * 1024 + warp * 128 + u * 32 + lane;
        const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(slot + u));
        const int bytes = p < p1 ? 16 : 0;  // zero-fill past the range
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(wp + (p < p1 ? p : p0)), "r"(bytes));
      }
    }
    asm volatile("cp.async.commit_group;");
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) issue(s);
  for (int i = t; i < K / 4; i += blockDim.x) xs[i] = reinterpret_cast<const float4*>(x)[i];
  __syncthreads();
  for (long c = 0; c < chunks; ++c) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
    issue(c + STAGES - 1);  // into the slot chunk c - 1 used: this thread's own, already read
    const uint4* slot = ring + (c % STAGES) * 1024 + t * 4;
    // The warp's 128 pieces lie in one row (the range starts at a row, K8 % 128 == 0): its row and
    // first column from one 32-bit division a chunk (a 64-bit one a piece made the loop issue-bound).
    const unsigned off = static_cast<unsigned>(c * 1024 + warp * 128), k8 = static_cast<unsigned>(K8);
    const unsigned row = off / k8, col0 = off - row * k8;
    float acc = 0.f;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const unsigned col8 = col0 + u * 32 + lane;
      acc += dot8(slot[u], xs[2 * col8], xs[2 * col8 + 1]);
    }
    acc = lg_warp_sum(acc);
    if (lane == 0 && p0 + off < p1) atomicAdd(y + r0 + row, acc);
  }
  asm volatile("cp.async.wait_group 0;");
}

// The same stream through the bulk-copy engine (TMA, cp.async.bulk): thread 0 copies each chunk
// (U pieces a thread: 16 KB at U = 4, 32 KB at 8) of the block's range into a ring slot with one instruction, completing on an mbarrier the
// block waits on; a barrier after each chunk's math frees its slot for the chunk STAGES ahead.
template <int STAGES, int U = 4>
__global__ void __launch_bounds__(256) gemv_bulk(const __nv_bfloat16* __restrict__ W, const float* __restrict__ x,
                                                 float* __restrict__ y, int N, int K) {
  extern __shared__ float4 smem[];
  __shared__ __align__(8) unsigned long long bar[STAGES];
  float4* xs = smem;
  uint4* ring = reinterpret_cast<uint4*>(smem + K / 4);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long K8 = K / 8;
  const long r0 = (long)N * blockIdx.x / gridDim.x, r1 = (long)N * (blockIdx.x + 1) / gridDim.x;
  const long p0 = r0 * K8, p1 = r1 * K8;
  constexpr long CH = 256L * U * 16;  // bytes a chunk: U pieces a thread
  const long total = (p1 - p0) * 16, chunks = (total + CH - 1) / CH;
  const char* src0 = reinterpret_cast<const char*>(W) + p0 * 16;
  auto bar_at = [&](int s) { return static_cast<unsigned>(__cvta_generic_to_shared(&bar[s])); };
  if (t == 0) {
    for (int s = 0; s < STAGES; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_at(s)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](long c) {
    if (t != 0 || c >= chunks) return;
    const int s = static_cast<int>(c % STAGES);
    const unsigned bytes = static_cast<unsigned>(min(CH, total - c * CH));
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(ring + s * 256 * U));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_at(s)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src0 + c * CH), "r"(bytes), "r"(bar_at(s))
                 : "memory");
  };
  for (int s = 0; s < STAGES; ++s) issue(s);
  for (int i = t; i < K / 4; i += blockDim.x) xs[i] = reinterpret_cast<const float4*>(x)[i];
  __syncthreads();
  for (long c = 0; c < chunks; ++c) {
    const int s = static_cast<int>(c % STAGES);
    const unsigned parity = static_cast<unsigned>((c / STAGES) & 1);
    unsigned done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar_at(s)), "r"(parity) : "memory");
    const unsigned off = static_cast<unsigned>(c * 256 * U + warp * 32 * U), k8 = static_cast<unsigned>(K8);
    if (p0 + off < p1) {
      const unsigned row = off / k8, col0 = off - row * k8;
      const uint4* slot = ring + s * 256 * U + warp * 32 * U;
      float acc = 0.f;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const unsigned col8 = col0 + u * 32 + lane;
        acc += dot8(slot[u * 32 + lane], xs[2 * col8], xs[2 * col8 + 1]);
      }
      acc = lg_warp_sum(acc);
      if (lane == 0) atomicAdd(y + r0 + row, acc);
    }
    __syncthreads();  // every thread is done with slot s
    issue(c + STAGES);
  }
}

struct Shape {
  const char* name;
  int N, K;
};

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const Shape shapes[] = {{"30B-A3B q/k/v", 5120, 2048}, {"30B-A3B o_proj", 2048, 4096}, {"8B q/k/v", 6144, 4096},
                          {"8B o_proj", 4096, 4096},       {"8B gate/up", 24576, 4096},  {"8B down", 4096, 12288}};
  std::printf("%-16s %6s %6s | %-22s %8s %8s %10s\n", "shape", "N", "K", "kernel", "us", "TB/s", "max rel err");
  for (const Shape& sh : shapes) {
    const size_t bytes = (size_t)sh.N * sh.K * 2;
    const int L = (int)std::max<size_t>(8, (200u << 20) / bytes + 1);
    __nv_bfloat16* W;
    float *x, *y;
    CK(cudaMalloc(&W, bytes * L));
    CK(cudaMalloc(&x, sh.K * 4));
    CK(cudaMalloc(&y, (size_t)sh.N * 4 * L));
    fill_bf16<<<1024, 256>>>(W, (size_t)sh.N * sh.K * L, 7);
    std::vector<float> hx(sh.K);
    for (int k = 0; k < sh.K; ++k) hx[k] = std::sin(0.37f * k) + 0.1f;
    CK(cudaMemcpy(x, hx.data(), sh.K * 4, cudaMemcpyHostToDevice));
    // Reference of copy 0 in double precision.
    std::vector<__nv_bfloat16> hw((size_t)sh.N * sh.K);
    CK(cudaMemcpy(hw.data(), W, bytes, cudaMemcpyDeviceToHost));
    std::vector<double> ref(sh.N);
    for (int n = 0; n < sh.N; ++n) {
      double s = 0;
      for (int k = 0; k < sh.K; ++k) s += (double)__bfloat162float(hw[(size_t)n * sh.K + k]) * hx[k];
      ref[n] = s;
    }
    // zero_first: the form adds into y (the ring form), so the checked run starts from zeros.
    auto run = [&](const char* label, bool zero_first, auto launch) {
      for (int l = 0; l < L; ++l) launch(W + (size_t)l * sh.N * sh.K, y + (size_t)l * sh.N);  // warm-up
      CK(cudaDeviceSynchronize());
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a));
      CK(cudaEventCreate(&b));
      const int reps = 5;
      CK(cudaEventRecord(a));
      for (int r = 0; r < reps; ++r)
        for (int l = 0; l < L; ++l) launch(W + (size_t)l * sh.N * sh.K, y + (size_t)l * sh.N);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      const double us = 1000.0 * ms / (reps * L);
      // Check copy 0 from a fresh run (the timed runs accumulated into y for the ring form).
      CK(cudaMemset(y, zero_first ? 0 : 0xff, (size_t)sh.N * 4));
      launch(W, y);
      std::vector<float> hy(sh.N);
      CK(cudaMemcpy(hy.data(), y, sh.N * 4, cudaMemcpyDeviceToHost));
      double err = 0, scale = 0;
      for (int n = 0; n < sh.N; ++n) scale = std::max(scale, std::fabs(ref[n]));
      for (int n = 0; n < sh.N; ++n) err = std::max(err, std::fabs(hy[n] - ref[n]) / scale);
      std::printf("%-16s %6d %6d | %-22s %8.2f %8.2f %10.2e\n", sh.name, sh.N, sh.K, label, us, bytes / us / 1e6, err);
    };
    const size_t xs_bytes = sh.K * 4;
    for (int occ : {2, 3, 4}) {
      char label[64];
      std::snprintf(label, sizeof label, "regs D=4, %d blocks/SM", occ);
      run(label, false, [&](const __nv_bfloat16* w, float* out) {
        gemv_regs<4><<<sms * occ, 256, xs_bytes>>>(w, x, out, sh.N, sh.K);
      });
    }
    auto ring = [&](auto kernel, int stages, int per_sm) {
      const size_t smem = xs_bytes + (size_t)stages * 1024 * 16;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      char label[64];
      std::snprintf(label, sizeof label, "ring S=%d, %d blocks/SM", stages, per_sm);
      run(label, true, [&](const __nv_bfloat16* w, float* out) {
        kernel<<<sms * per_sm, 256, smem>>>(w, x, out, sh.N, sh.K);
      });
    };
    ring(gemv_ring<4>, 4, 2);
    ring(gemv_ring<8>, 8, 1);
    auto bulk = [&](auto kernel, int stages, int per_sm, int u = 4) {
      const size_t smem = xs_bytes + (size_t)stages * 256 * u * 16;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      char label[64];
      std::snprintf(label, sizeof label, "bulk S=%d x %d KB, %d/SM", stages, u * 4, per_sm);
      run(label, true, [&](const __nv_bfloat16* w, float* out) {
        kernel<<<sms * per_sm, 256, smem>>>(w, x, out, sh.N, sh.K);
      });
    };
    bulk(gemv_bulk<4>, 4, 2);
    bulk(gemv_bulk<3>, 3, 3);
    bulk(gemv_bulk<3, 8>, 3, 2, 8);
    bulk(gemv_bulk<2, 8>, 2, 3, 8);
    bulk(gemv_bulk<4, 8>, 4, 1, 8);
    CK(cudaFree(W));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
