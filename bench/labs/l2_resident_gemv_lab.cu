// Lab (issue 16; session 50): can a decode GEMV's weights be waiting in the L2 when it runs,
// brought there while the 30B-A3B step's memory sits idle, and kept there while the experts'
// 75 MB stream past?
//
// Why: at one token the step's launches between the weight streams (attention, router, top-k:
// ~15 us a layer on the H200, sessions 22-23) leave DRAM idle, and the next weights they wait on
// do not depend on the routing: the next layer's q/k/v (21 MB) and o_proj (16.8 MB). Session 22's
// call 8 prefetched o_proj into the L2 from the attention launch and gained nothing, without
// knowing whether the lines were still there when o_proj ran, or whether a GEMV reading the L2
// is faster at all (its ramp and tail stay). This lab answers both for the q/k/v GEMV's shape:
// the GEMV's time cold, after its weights were prefetched into the L2 (`prefetch.global.L2` with
// an evict_last policy, or loaded with one), and after that with the experts' bytes streamed
// between (loads with an evict_first policy, or plain). With and without the persisting L2
// set-aside (cudaLimitPersistingL2CacheSize), which the evict_last policy may need.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -arch=sm_90 bench/labs/l2_resident_gemv_lab.cu -o l2_gemv_lab
// Run:   ./l2_gemv_lab [reps=15]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../src/kernels/device_helpers.cuh"  // lg_bf16_lo/hi, lg_ld_stream, lg_warp_sum
#include "lab_common.cuh"

// Qwen3-30B-A3B q/k/v: 5,120 rows of hidden 2,048 (21 MB); the routed experts a layer: 8 x 3 x
// 768 x 2,048 bf16 (75.5 MB).
constexpr int N = 5120, KD = 2048, CK_ = KD / 256;  // uint4 a lane of a row
constexpr size_t kWeightBytes = size_t(N) * KD * 2;
constexpr size_t kExpertBytes = size_t(8) * 3 * 768 * 2048 * 2;
constexpr size_t kFlushBytes = size_t(256) << 20;

enum Policy { kNormal = 0, kEvictLast = 1, kEvictFirst = 2 };

__device__ __forceinline__ uint64_t make_policy(int policy) {
  uint64_t p = 0;
  if (policy == kEvictLast) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  if (policy == kEvictFirst) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

__device__ __forceinline__ uint4 ld_hinted(const uint4* p, uint64_t policy) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(policy));
  return r;
}

// Reads n16 uint4 with the policy, 8 loads a thread in flight; writes nothing unless the XOR of
// everything read is a value no fill makes (so the loads are not dropped).
__global__ void touch(const uint4* p, size_t n16, int policy, unsigned* sink) {
  const uint64_t pol = make_policy(policy);
  unsigned acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u)
      if (i + u * stride < n16) v[u] = policy == kNormal ? lg_ld_stream(p + i + u * stride) : ld_hinted(p + i + u * stride, pol);
#pragma unroll
    for (int u = 0; u < 8; ++u)
      if (i + u * stride < n16) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// prefetch.global.L2::evict_last of every 128-byte line: no registers, no wait.
__global__ void prefetch_evict_last(const char* p, size_t bytes) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * 128;
  for (size_t o = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * 128; o < bytes; o += stride)
    asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p + o));
}

// cp.async.bulk.prefetch.L2 of 64 KB chunks with an evict_last policy, from ONE block: how the
// step's one-block top-k launch (or any launch's idle warps) could send a whole GEMV's weights
// to the L2 in a few hundred instructions.
__global__ void bulk_prefetch_evict_last(const char* p, size_t bytes) {
  const uint64_t pol = make_policy(kEvictLast);
  constexpr size_t kChunk = 64 << 10;
  for (size_t o = threadIdx.x * kChunk; o < bytes; o += blockDim.x * kChunk) {
    const unsigned n = unsigned(bytes - o < kChunk ? bytes - o : kChunk);
    asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p + o), "r"(n), "l"(pol)
                 : "memory");
  }
}

// y = W x, a warp a row, all 8 of a lane's 16-byte loads in flight before the first use (as the
// compiled lane's decode GEMV issues them).
__global__ void __launch_bounds__(256) gemv(const __nv_bfloat16* W, const float* x, float* y) {
  const int lane = threadIdx.x & 31;
  for (int n = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; n < N; n += (gridDim.x * blockDim.x) >> 5) {
    const uint4* row = reinterpret_cast<const uint4*>(W + size_t(n) * KD);
    uint4 w[CK_];
#pragma unroll
    for (int c = 0; c < CK_; ++c) w[c] = lg_ld_stream(row + c * 32 + lane);
    float acc = 0.f;
#pragma unroll
    for (int c = 0; c < CK_; ++c) {
      const float4* xr = reinterpret_cast<const float4*>(x) + (c * 32 + lane) * 2;
      const float4 a = __ldg(xr), b = __ldg(xr + 1);
      acc += a.x * lg_bf16_lo(w[c].x) + a.y * lg_bf16_hi(w[c].x) + a.z * lg_bf16_lo(w[c].y) + a.w * lg_bf16_hi(w[c].y) +
             b.x * lg_bf16_lo(w[c].z) + b.y * lg_bf16_hi(w[c].z) + b.z * lg_bf16_lo(w[c].w) + b.w * lg_bf16_hi(w[c].w);
    }
    acc = lg_warp_sum(acc);
    if (lane == 0) y[n] = acc;
  }
}

// About 10 us of one warp doing nothing (the step's router and top-k latency, in which a bulk
// prefetch issued before it has time to land).
__global__ void spin(unsigned* sink) {
  const long long t0 = clock64();
  while (clock64() - t0 < 18000) {
  }
  if (threadIdx.x == 99) *sink = 0;
}

__global__ void fill_f32(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed * 97531u;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = (h & 0xffff) / 65535.f - 0.5f;
  }
}

struct Bufs {
  __nv_bfloat16* W;
  float *x, *y;
  uint4 *experts, *flush;
  unsigned* sink;
  int sms;
};

// One step, a letter: p prefetch W evict_last (every thread of a full grid a line), b
// bulk-prefetch it evict_last from one block, w ~10 us of one idle warp, l load W evict_last,
// n load W plainly, g the GEMV, E stream the experts evict_first, S stream them plainly.
void launch_step(const Bufs& b, char step, cudaStream_t s) {
  const int grid = b.sms * 8;
  const auto* w16 = reinterpret_cast<const uint4*>(b.W);
  switch (step) {
    case 'p': prefetch_evict_last<<<grid, 256, 0, s>>>(reinterpret_cast<const char*>(b.W), kWeightBytes); break;
    case 'b': bulk_prefetch_evict_last<<<1, 256, 0, s>>>(reinterpret_cast<const char*>(b.W), kWeightBytes); break;
    case 'w': spin<<<1, 32, 0, s>>>(b.sink); break;
    case 'l': touch<<<grid, 256, 0, s>>>(w16, kWeightBytes / 16, kEvictLast, b.sink); break;
    case 'n': touch<<<grid, 256, 0, s>>>(w16, kWeightBytes / 16, kNormal, b.sink); break;
    case 'g': gemv<<<N / 8, 256, 0, s>>>(b.W, b.x, b.y); break;
    case 'E': touch<<<grid, 256, 0, s>>>(b.experts, kExpertBytes / 16, kEvictFirst, b.sink); break;
    case 'S': touch<<<grid, 256, 0, s>>>(b.experts, kExpertBytes / 16, kNormal, b.sink); break;
    default: std::fprintf(stderr, "no step '%c'\n", step); std::exit(2);
  }
}

// The L2 emptied of W: persisting lines reset to normal, then 256 MB read plainly.
void flush_l2(const Bufs& b, cudaStream_t s) {
  CK(cudaCtxResetPersistingL2Cache());
  touch<<<b.sms * 8, 256, 0, s>>>(b.flush, kFlushBytes / 16, kNormal, b.sink);
}

// us between events around what `launch` enqueues on s.
template <class Launch>
float timed_us(cudaStream_t s, Launch&& launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, s));
  launch();
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms * 1000.f;
}

// The GEMV's time after the steps (letters of launch_step) from an empty L2.
float run_case(const Bufs& b, const char* steps, cudaStream_t s) {
  flush_l2(b, s);
  for (const char* c = steps; *c; ++c) launch_step(b, *c, s);
  CK(cudaMemsetAsync(b.y, 0xff, N * sizeof(float), s));  // poisoned: a GEMV that writes nothing fails the check
  return timed_us(s, [&] { gemv<<<N / 8, 256, 0, s>>>(b.W, b.x, b.y); });
}

// One step's own time from an empty L2, us: how long the prefetches take to issue and the
// streams to run.
float time_step(const Bufs& b, char step, cudaStream_t s) {
  flush_l2(b, s);
  return timed_us(s, [&] { launch_step(b, step, s); });
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s: L2 %d MB, persisting set-aside at most %.1f MB, %d SMs\n", prop.name, prop.l2CacheSize >> 20,
              prop.persistingL2CacheMaxSize / 1048576.0, prop.multiProcessorCount);
  Bufs b{};
  b.sms = prop.multiProcessorCount;
  CK(cudaMalloc(&b.W, kWeightBytes));
  CK(cudaMalloc(&b.x, KD * sizeof(float)));
  CK(cudaMalloc(&b.y, N * sizeof(float)));
  CK(cudaMalloc(&b.experts, kExpertBytes));
  CK(cudaMalloc(&b.flush, kFlushBytes));
  CK(cudaMalloc(&b.sink, sizeof(unsigned)));
  fill_bf16<<<1024, 256>>>(b.W, kWeightBytes / 2, 7u);
  fill_bf16<<<1024, 256>>>(reinterpret_cast<__nv_bfloat16*>(b.experts), kExpertBytes / 2, 11u);
  fill_bf16<<<1024, 256>>>(reinterpret_cast<__nv_bfloat16*>(b.flush), kFlushBytes / 2, 13u);
  fill_f32<<<8, 256>>>(b.x, KD, 5u);
  CK(cudaDeviceSynchronize());
  cudaStream_t s;
  CK(cudaStreamCreate(&s));

  // The GEMV against a double-precision reference, once.
  {
    run_case(b, "", s);
    std::vector<__nv_bfloat16> w(size_t(N) * KD);
    std::vector<float> x(KD), y(N);
    CK(cudaMemcpy(w.data(), b.W, kWeightBytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(x.data(), b.x, KD * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), b.y, N * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int k = 0; k < KD; ++k) {
        const double p = double(__bfloat162float(w[size_t(n) * KD + k])) * x[k];
        ref += p;
        mag += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(y[n] - ref) / (mag + 1e-30));
    }
    std::printf("gemv check: worst |y - ref| / sum|w x| = %.2e (%s)\n", worst, worst < 1e-5 ? "ok" : "FAILED");
    if (!(worst < 1e-5)) return 1;
  }

  struct Case { const char* steps; const char* what; };
  const Case cases[] = {
      {"", "cold (after a 256 MB flush)"},
      {"g", "after itself (its weights as the last GEMV left them)"},
      {"p", "after prefetch.global.L2::evict_last of W"},
      {"b", "right after one block's bulk prefetch of W (evict_last)"},
      {"bw", "bulk prefetch, then ~10 us of one idle warp"},
      {"bwE", "bulk prefetch, ~10 us, then the experts evict_first"},
      {"l", "after loading W with an evict_last policy"},
      {"n", "after loading W plainly"},
      {"pE", "prefetch evict_last, then the experts' 75.5 MB evict_first"},
      {"lE", "evict_last loads, then the experts evict_first"},
      {"pS", "prefetch evict_last, then the experts plainly"},
      {"nE", "plain loads, then the experts evict_first"},
      {"nS", "plain loads, then the experts plainly"},
  };
  for (const size_t set_aside : {size_t(0), size_t(prop.persistingL2CacheMaxSize)}) {
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set_aside));
    std::printf("\npersisting L2 set-aside %.1f MB: the q/k/v GEMV (21 MB), us, median of %d\n", set_aside / 1048576.0,
                reps);
    for (const Case& c : cases) {
      std::vector<float> t;
      for (int r = 0; r < reps; ++r) t.push_back(run_case(b, c.steps, s));
      std::printf("  %-4s %8.2f  %s\n", c.steps[0] ? c.steps : "-", median(t), c.what);
    }
    for (const char step : {'p', 'b', 'l', 'E', 'S'}) {
      std::vector<float> t;
      for (int r = 0; r < reps; ++r) t.push_back(time_step(b, step, s));
      std::printf("  step %c alone: %8.2f us\n", step, median(t));
    }
  }
  std::printf("\n(GEMV floor at the copy rate: 21.0 MB / 4.25 TB/s = 4.9 us on an H200, / 3.0 = 7.0 on an H100)\n");
  return 0;
}
