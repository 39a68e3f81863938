// The device draw (row_draws_kernel.h): one block of 1,024 threads a row. Passes over the row, each a
// read of V floats from L2: the max (and a NaN/Inf check); with min_p and top-k, the count of
// min_p's candidates; top-k's threshold key by a radix select over the 64-bit keys (8 bits a
// pass, from the top, until the k-th key is pinned); top-p's the same over fixed-point masses;
// then the draw: each thread sums the nucleus' masses of a contiguous run of ids, a block scan
// finds the run holding the target, and its thread walks it. Every weight, key and sum is
// runtime/draw_math.h's, as in the host's draw_token.
#include "runtime/cuda/row_draws_kernel.h"

#include <cstdint>
#include <string>

#include "runtime/cuda/cuda_check.h"
#include "runtime/draw_math.h"
#include "support/error.h"

namespace lg::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kAll = 0xffffffffu;
constexpr int kNoDigit = 256;  ///< the digit of an element outside the group a pass counts

struct Shared {
  unsigned count[256];
  unsigned long long mass[256];
  unsigned long long warp_u64[kWarps];
  float warp_f32[kWarps];
  int warp_flag[kWarps];
  unsigned long long pick_need;  ///< what the chosen bin must still supply
  int pick_digit;
  unsigned pick_count;
};

__device__ float block_max(float v, bool& any_bad, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kAll, v, o));
  const int bad = __any_sync(kAll, any_bad);
  if (lane == 0) {
    sh.warp_f32[warp] = v;
    sh.warp_flag[warp] = bad;
  }
  __syncthreads();
  float m = sh.warp_f32[0];
  int b = sh.warp_flag[0];
  for (int w = 1; w < kWarps; ++w) {
    m = fmaxf(m, sh.warp_f32[w]);
    b |= sh.warp_flag[w];
  }
  __syncthreads();
  any_bad = b != 0;
  return m;
}

__device__ unsigned long long block_sum(unsigned long long v, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kAll, v, o);
  if (lane == 0) sh.warp_u64[warp] = v;
  __syncthreads();
  unsigned long long s = 0;
  for (int w = 0; w < kWarps; ++w) s += sh.warp_u64[w];
  __syncthreads();
  return s;
}

/// Whether token i is a candidate at or above the selection's lower bound, and its fixed-point
/// weight when it is. The key is tested first: once a cut has narrowed the tokens, most fail it,
/// and the exp is skipped for them.
__device__ __forceinline__ bool candidate(const float* row, int i, float top, const DrawParams& p, uint64_t lower,
                                          uint64_t mask, uint64_t prefix, uint64_t& key, uint64_t& fixed) {
  const float l = row[i];
  key = draw::key(l, i);
  if (key < lower || (key & mask) != prefix) return false;
  const float w = draw::weight(l, top, p.inv_temperature);
  fixed = draw::fixed(w);
  return w >= p.min_p;
}

/// The radix select: the key kappa such that the candidates with key >= kappa are the first
/// `need` of them by key (by_mass false), or the shortest head whose fixed-point mass reaches
/// `need` (by_mass true), among candidates with key >= lower. Returns kappa.
__device__ uint64_t radix_select(const float* row, int V, float top, const DrawParams& p, uint64_t lower,
                                 unsigned long long need, bool by_mass, Shared& sh) {
  const int lane = threadIdx.x & 31;
  uint64_t prefix = 0, mask = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += kThreads) {
      sh.count[b] = 0;
      sh.mass[b] = 0;
    }
    __syncthreads();
    for (int i0 = 0; i0 < V; i0 += kThreads) {
      const int i = i0 + static_cast<int>(threadIdx.x);
      int digit = kNoDigit;
      uint64_t key = 0, fixed = 0;
      if (i < V && candidate(row, i, top, p, lower, mask, prefix, key, fixed)) digit = static_cast<int>((key >> shift) & 255);
      if (digit == kNoDigit) fixed = 0;
      // Past the first digits most of a warp's tokens have left the group: nothing to add.
      if (!__any_sync(kAll, digit != kNoDigit)) continue;
      // Lanes with one digit add once: the first digits are shared by most of a row's keys.
      const unsigned group = __match_any_sync(kAll, digit);
      const bool leader = digit != kNoDigit && lane == __ffs(group) - 1;
      if (by_mass) {
        const unsigned hi = __reduce_add_sync(group, static_cast<unsigned>(fixed >> 20));
        const unsigned lo = __reduce_add_sync(group, static_cast<unsigned>(fixed & 0xFFFFFu));
        if (leader) atomicAdd(&sh.mass[digit], (static_cast<unsigned long long>(hi) << 20) + lo);
      }
      if (leader) atomicAdd(&sh.count[digit], static_cast<unsigned>(__popc(group)));
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane j holds bins 255 - 8 j .. 248 - 8 j: lane order is descending bin order.
      unsigned long long own = 0;
      for (int j = 0; j < 8; ++j) {
        const int b = 255 - 8 * lane - j;
        own += by_mass ? sh.mass[b] : sh.count[b];
      }
      unsigned long long incl = own;
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned long long v = __shfl_up_sync(kAll, incl, o);
        if (lane >= o) incl += v;
      }
      const unsigned long long excl = incl - own;
      if (excl < need && need <= incl) {
        unsigned long long before = excl;
        for (int j = 0; j < 8; ++j) {
          const int b = 255 - 8 * lane - j;
          const unsigned long long here = by_mass ? sh.mass[b] : sh.count[b];
          if (need <= before + here) {
            sh.pick_digit = b;
            sh.pick_need = need - before;
            sh.pick_count = sh.count[b];
            break;
          }
          before += here;
        }
      }
    }
    __syncthreads();
    need = sh.pick_need;
    prefix |= static_cast<uint64_t>(sh.pick_digit) << shift;
    mask |= uint64_t{255} << shift;
    const unsigned in_bin = sh.pick_count;
    __syncthreads();
    // The bin's members all belong (count: exactly the ones still needed; mass: a single key):
    // its lowest possible key is the bound.
    if ((!by_mass && in_bin == need) || (by_mass && in_bin == 1)) break;
  }
  // The group was searched among keys >= lower: a bound below lower would let those back in.
  return prefix > lower ? prefix : lower;
}

__global__ void __launch_bounds__(kThreads) row_draws_kernel(const float* __restrict__ logits, int V,
                                                             const DrawParams* __restrict__ params,
                                                             const int32_t* __restrict__ rows, int32_t* __restrict__ tokens) {
  __shared__ Shared sh;
  const DrawParams p = params[blockIdx.x];
  const float* row = logits + static_cast<int64_t>(rows[blockIdx.x]) * V;
  float top = -INFINITY;
  bool bad = false;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const float l = row[i];
    bad |= !isfinite(l);
    top = fmaxf(top, l);
  }
  top = block_max(top, bad, sh);
  if (bad) {
    if (threadIdx.x == 0) tokens[blockIdx.x] = -1;
    return;
  }
  uint64_t lower = 0;
  if (p.top_k > 0) {
    unsigned long long candidates = static_cast<unsigned long long>(V);
    if (p.min_p > 0) {
      unsigned long long c = 0;
      for (int i = threadIdx.x; i < V; i += kThreads) {
        uint64_t key, fixed;
        c += candidate(row, i, top, p, 0, 0, 0, key, fixed);
      }
      candidates = block_sum(c, sh);
    }
    if (static_cast<unsigned long long>(p.top_k) < candidates)
      lower = radix_select(row, V, top, p, 0, static_cast<unsigned long long>(p.top_k), false, sh);
  }
  if (p.top_p < 1) {
    unsigned long long m = 0;
    for (int i = threadIdx.x; i < V; i += kThreads) {
      uint64_t key, fixed;
      if (candidate(row, i, top, p, lower, 0, 0, key, fixed)) m += fixed;
    }
    const unsigned long long mass = block_sum(m, sh);
    lower = radix_select(row, V, top, p, lower, draw::nucleus_need(p.top_p, mass), true, sh);
  }
  // The draw: thread t sums ids [t * run, (t + 1) * run), a block scan places the target.
  const int run = (V + kThreads - 1) / kThreads;
  const int begin = min(V, static_cast<int>(threadIdx.x) * run), end = min(V, begin + run);
  unsigned long long own = 0;
  for (int i = begin; i < end; ++i) {
    uint64_t key, fixed;
    if (candidate(row, i, top, p, lower, 0, 0, key, fixed)) own += fixed;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long incl = own;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v = __shfl_up_sync(kAll, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) sh.warp_u64[warp] = incl;
  __syncthreads();
  unsigned long long warp_before = 0, mass = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) warp_before += sh.warp_u64[w];
    mass += sh.warp_u64[w];
  }
  const unsigned long long excl = warp_before + incl - own;
  const unsigned long long target = draw::draw_target(p.u, mass);
  if (excl <= target && target < excl + own) {
    unsigned long long running = excl;
    for (int i = begin; i < end; ++i) {
      uint64_t key, fixed;
      if (!candidate(row, i, top, p, lower, 0, 0, key, fixed)) continue;
      running += fixed;
      if (running > target) {
        tokens[blockIdx.x] = i;
        break;
      }
    }
  }
}

}  // namespace

void launch_row_draws(const float* logits, int64_t V, const DrawParams* params, const int32_t* rows, int32_t* tokens,
                      int n, cudaStream_t stream) {
  if (V < 1 || V > INT32_MAX) throw Error("row draws: a vocabulary of " + std::to_string(V) + " tokens is outside 1..2^31 - 1");
  if (n <= 0) return;
  row_draws_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(logits, static_cast<int>(V), params, rows, tokens);
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::cuda
