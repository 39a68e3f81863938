// The device draw (row_draws_kernel.h): one block of 1,024 threads a row, each pass a read of the
// row's V floats from L2. The first finds the max (and any NaN/Inf) and each thread's largest key.
// A cut (top-k, top-p) then gathers the tokens it may keep into shared memory and finishes there
// (draw_gathered): below a bound taken from the threads' largest keys, sorted (the k-th largest
// holds a top-k's k tokens; else a pass counts what eleven such bounds hold and picks the highest
// that holds the cut's tokens within 4,096 places). Where no bound does (a flat row's nucleus of
// many thousand tokens), radix selects over the 64-bit keys (8 bits a pass) find top-k's and
// top-p's bounds. The draw itself is the race (draw::race_place): each thread's least place over
// its tokens of the nucleus, then the block's least. Every weight, key and
// sum is runtime/draw_math.h's, as in the host's draw_token.
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
constexpr int kCompact = 4096;  ///< most tokens draw_gathered holds in shared memory

struct Shared {
  unsigned count[256];
  unsigned long long mass[256];
  unsigned long long warp_u64[kWarps];
  float warp_f32[kWarps];
  int warp_flag[kWarps];
  unsigned long long pick_need;  ///< what the chosen bin must still supply
  int pick_digit;
  unsigned pick_count;
  unsigned gathered;                  ///< draw_gathered: the candidates at or above its bound
  unsigned long long list[kCompact];  ///< the threads' largest keys, then those candidates' keys
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

/// The exclusive prefix sum of one value a thread, in thread order, and the block's total.
__device__ void block_scan(unsigned long long v, unsigned long long& excl, unsigned long long& total, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long t = __shfl_up_sync(kAll, incl, o);
    if (lane >= o) incl += t;
  }
  if (lane == 31) sh.warp_u64[warp] = incl;
  __syncthreads();
  unsigned long long before = 0, all = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += sh.warp_u64[w];
    all += sh.warp_u64[w];
  }
  __syncthreads();
  excl = before + incl - v;
  total = all;
}

/// The block's sum of one value a thread: block_scan's total (its barriers included).
__device__ unsigned long long block_sum(unsigned long long v, Shared& sh) {
  unsigned long long excl, total;
  block_scan(v, excl, total, sh);
  return total;
}

/// The block's least of one value a thread (every thread gets it).
__device__ unsigned long long block_min(unsigned long long v, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(kAll, v, o));
  if (lane == 0) sh.warp_u64[warp] = v;
  __syncthreads();
  unsigned long long m = sh.warp_u64[0];
  for (int w = 1; w < kWarps; ++w) m = min(m, sh.warp_u64[w]);
  __syncthreads();
  return m;
}

/// Sorts keys a[0 .. P) (P a power of two) largest first (the order by logit). Bitonic: the
/// block's threads share each step's compare-exchanges.
__device__ void sort_descending(unsigned long long* a, int P) {
  for (int k = 2; k <= P; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < P; i += kThreads) {
        const int ixj = i ^ j;
        if (ixj <= i) continue;
        const unsigned long long x = a[i], y = a[ixj];
        if ((i & k) == 0 ? x < y : x > y) {
          a[i] = y;
          a[ixj] = x;
        }
      }
      __syncthreads();
    }
}

/// The logit and the id a key (draw::key) was made of.
__device__ __forceinline__ float key_logit(uint64_t key) {
  uint32_t b = static_cast<uint32_t>(key >> 32);
  b = (b & 0x80000000u) ? (b & 0x7FFFFFFFu) : ~b;
  return __uint_as_float(b);
}
__device__ __forceinline__ int key_id(uint64_t key) { return static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(key)); }

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

constexpr int kPerThread = kCompact / kThreads;  ///< gathered tokens a thread scans

/// Thread t's kPerThread running sums of the gathered tokens t * kPerThread .. (values v[]), each
/// made exclusive over the block: excl[e] is the sum of every value before token e.
__device__ unsigned long long block_scan_chunks(const unsigned long long (&v)[kPerThread],
                                                unsigned long long (&excl)[kPerThread], Shared& sh) {
  unsigned long long own = 0;
  for (int e = 0; e < kPerThread; ++e) own += v[e];
  unsigned long long before, total;
  block_scan(own, before, total, sh);
  for (int e = 0; e < kPerThread; ++e) {
    excl[e] = before;
    before += v[e];
  }
  return total;
}

/// The candidates (min_p) at or above `bound` gathered into shared memory, sorted by key there,
/// cut by top-k (when `cut_k`) and top-p (the need taken of the kept mass: the first top_k's when
/// top-k cuts, else `mass_c`, every candidate's), then drawn. The caller has made sure the bound
/// holds every kept token (the top k, or a head of the order reaching top-p's need). Returns false
/// (nothing drawn) when more than kCompact tokens pass the bound; the radix selects then run.
__device__ bool draw_gathered(const float* row, int V, float top, const DrawParams& p, uint64_t bound, bool cut_k,
                              unsigned long long mass_c, Shared& sh, int32_t* token) {
  if (threadIdx.x == 0) sh.gathered = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < V; i += kThreads) {
    uint64_t key, fixed;
    if (!candidate(row, i, top, p, bound, 0, 0, key, fixed)) continue;
    const unsigned slot = atomicAdd(&sh.gathered, 1u);
    if (slot < kCompact) sh.list[slot] = key;
  }
  __syncthreads();
  const int n = static_cast<int>(sh.gathered);
  if (n > kCompact) return false;
  int P = 1;
  while (P < n) P <<= 1;
  for (int i = n + static_cast<int>(threadIdx.x); i < P; i += kThreads) sh.list[i] = 0;
  __syncthreads();
  sort_descending(sh.list, P);
  // Thread t holds tokens t * kPerThread .. of the order; the first `kept` are top-k's.
  const int kept = cut_k ? min(n, p.top_k) : n, first = static_cast<int>(threadIdx.x) * kPerThread;
  uint64_t keys[kPerThread];
  unsigned long long w[kPerThread], excl[kPerThread];
  for (int e = 0; e < kPerThread; ++e) {
    keys[e] = first + e < kept ? sh.list[first + e] : 0;
    w[e] = first + e < kept ? draw::fixed(draw::weight(key_logit(keys[e]), top, p.inv_temperature)) : 0;
  }
  const unsigned long long mass = block_scan_chunks(w, excl, sh);
  // Top-p: the head of the order up to the token whose running mass reaches the need.
  const unsigned long long need = p.top_p < 1 ? draw::nucleus_need(p.top_p, cut_k ? mass : mass_c) : ~0ull;
  int in = 0;
  for (int e = 0; e < kPerThread; ++e) in += first + e < kept && (p.top_p >= 1 || excl[e] < need);
  // (block_sum's barriers also keep the list until every thread holds its keys.)
  const int N = static_cast<int>(block_sum(static_cast<unsigned long long>(in), sh));
  // The race over the nucleus (a head of the order): each thread's tokens of it, then the block's
  // least place. The likeliest tokens come first in a thread's run, and bound the rest.
  unsigned long long best = ~0ull;
  for (int e = 0; e < kPerThread; ++e)
    if (first + e < N && w[e] != 0)
      best = min(best, static_cast<unsigned long long>(draw::race_place_below(
                           draw::weight(key_logit(keys[e]), top, p.inv_temperature), p.key, key_id(keys[e]), best)));
  best = block_min(best, sh);
  if (threadIdx.x == 0) *token = static_cast<int32_t>(static_cast<uint32_t>(best));
  return true;
}

/// Bounds for draw_gathered from the threads' largest keys, sorted into sh.list[0 .. kThreads):
/// the 2^j-th largest for j = 0 .. 10, and one pass over the row counting, for each bound, the
/// candidates (min_p) at or above it and their mass. Picks the highest bound that holds what the
/// cuts keep and at most kCompact tokens; `mass_c` gets every candidate's mass. Returns 0 when
/// none does (the caller runs the radix selects).
__device__ uint64_t gather_bound(const float* row, int V, float top, const DrawParams& p, unsigned long long& mass_c,
                                 bool& cut_k, Shared& sh) {
  constexpr int kBounds = 11;
  if (threadIdx.x < 32) {
    sh.count[threadIdx.x] = 0;
    sh.mass[threadIdx.x] = 0;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < V; i0 += kThreads) {
    const int i = i0 + static_cast<int>(threadIdx.x);
    int slot = kNoDigit;
    uint64_t key = 0, fixed = 0;
    if (i < V && candidate(row, i, top, p, 0, 0, 0, key, fixed)) {
      slot = kBounds;  // below every bound: counted in the candidates' totals only
      for (int j = 0; j < kBounds; ++j)
        if (key >= sh.list[(1 << j) - 1]) {
          slot = j;
          break;
        }
    }
    if (slot == kNoDigit) fixed = 0;
    const unsigned group = __match_any_sync(kAll, slot);
    const unsigned hi = __reduce_add_sync(group, static_cast<unsigned>(fixed >> 20));
    const unsigned lo = __reduce_add_sync(group, static_cast<unsigned>(fixed & 0xFFFFFu));
    if (slot != kNoDigit && lane == __ffs(group) - 1) {
      atomicAdd(&sh.count[slot], static_cast<unsigned>(__popc(group)));
      atomicAdd(&sh.mass[slot], (static_cast<unsigned long long>(hi) << 20) + lo);
    }
  }
  __syncthreads();
  unsigned long long n_c = 0;
  mass_c = 0;
  for (int j = 0; j <= kBounds; ++j) {
    n_c += sh.count[j];
    mass_c += sh.mass[j];
  }
  cut_k = p.top_k > 0 && static_cast<unsigned long long>(p.top_k) < n_c;
  const unsigned long long need = p.top_p < 1 ? draw::nucleus_need(p.top_p, mass_c) : 0;
  unsigned long long count = 0, mass = 0;
  uint64_t bound = 0;
  for (int j = 0; j < kBounds && bound == 0; ++j) {
    count += sh.count[j];
    mass += sh.mass[j];
    if (count > kCompact) break;
    const bool holds = cut_k ? count >= static_cast<unsigned long long>(p.top_k) : (p.top_p < 1 && mass >= need);
    if (holds) bound = sh.list[(1 << j) - 1];
  }
  __syncthreads();
  return bound;
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
  // The parameters sit in mapped host memory: read across the bus once, by one thread.
  __shared__ DrawParams block_params;
  __shared__ int32_t block_row;
  if (threadIdx.x == 0) {
    block_params = params[blockIdx.x];
    block_row = rows[blockIdx.x];
  }
  __syncthreads();
  const DrawParams p = block_params;
  const float* row = logits + static_cast<int64_t>(block_row) * V;
  float top = -INFINITY;
  bool bad = false;
  uint64_t thread_max = 0;  // every key is above 0 (its low word is at least 2^31)
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const float l = row[i];
    bad |= !isfinite(l);
    top = fmaxf(top, l);
    thread_max = max(thread_max, draw::key(l, i));
  }
  top = block_max(top, bad, sh);
  if (bad) {
    if (threadIdx.x == 0) tokens[blockIdx.x] = -1;
    return;
  }
  if (p.top_k > 0 || p.top_p < 1) {
    // A cut: gather the tokens it may keep into shared memory. The threads' largest keys, sorted,
    // give the bounds: the k-th largest holds a top-k's k tokens (those maxima) when min_p is off;
    // otherwise a pass counts what each of eleven bounds holds.
    sh.list[threadIdx.x] = thread_max;
    __syncthreads();
    sort_descending(sh.list, kThreads);
    bool cut_k = true;
    unsigned long long mass_c = 0;
    uint64_t bound = 0;
    if (p.top_k > 0 && p.top_k <= kThreads && p.top_k < V && p.min_p == 0)
      bound = sh.list[p.top_k - 1];
    else
      bound = gather_bound(row, V, top, p, mass_c, cut_k, sh);
    __syncthreads();
    if (bound != 0 && draw_gathered(row, V, top, p, bound, cut_k, mass_c, sh, &tokens[blockIdx.x])) return;
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
  // The race over the candidates at or above `lower` (the nucleus): each thread's least place
  // over a strided share of the ids, then the block's.
  unsigned long long best = ~0ull;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    uint64_t key, fixed;
    if (!candidate(row, i, top, p, lower, 0, 0, key, fixed) || fixed == 0) continue;
    best = min(best, static_cast<unsigned long long>(
                         draw::race_place_below(draw::weight(row[i], top, p.inv_temperature), p.key, i, best)));
  }
  best = block_min(best, sh);
  if (threadIdx.x == 0) tokens[blockIdx.x] = static_cast<int32_t>(static_cast<uint32_t>(best));
}

__global__ void __launch_bounds__(256) row_penalties_kernel(float* __restrict__ logits, int V,
                                                           const PenaltyRow* __restrict__ rows,
                                                           const LogitEdit* __restrict__ edits) {
  // The run's description sits in mapped host memory: read across the bus once.
  __shared__ PenaltyRow r;
  if (threadIdx.x == 0) r = rows[blockIdx.x];
  __syncthreads();
  float* row = logits + static_cast<int64_t>(r.row) * V;
  for (int i = threadIdx.x; i < r.count; i += blockDim.x) {
    const LogitEdit e = edits[r.begin + i];
    if (e.id >= 0 && e.id < V) row[e.id] = draw::edited(row[e.id], r.p, e);
  }
}

}  // namespace

void launch_row_penalties(float* logits, int64_t V, const PenaltyRow* rows, const LogitEdit* edits, int n,
                          cudaStream_t stream) {
  if (V < 1 || V > INT32_MAX) throw Error("row penalties: a vocabulary of " + std::to_string(V) + " tokens is outside 1..2^31 - 1");
  if (n <= 0) return;
  row_penalties_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(logits, static_cast<int>(V), rows, edits);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_row_draws(const float* logits, int64_t V, const DrawParams* params, const int32_t* rows, int32_t* tokens,
                      int n, cudaStream_t stream) {
  if (V < 1 || V > INT32_MAX) throw Error("row draws: a vocabulary of " + std::to_string(V) + " tokens is outside 1..2^31 - 1");
  if (n <= 0) return;
  row_draws_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(logits, static_cast<int>(V), params, rows, tokens);
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::cuda
