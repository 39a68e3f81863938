// The compiled lane's split-KV decode attention on the tensor cores: the chunk of keys one block of
// a split-KV attention launch takes (src/emit/cuda/attention.cpp, the "mma" form), for all G query
// heads of one KV head at once. The hand-written lane's v9 (src/lanes/qwen/kernels/
// attention_decode_gqa_tc.cuh) is the same scheme with Qwen's RoPE inlined; this one takes its
// queries and key rows from the emitted stage's lambdas, so every family's attention statement
// lifts to it.
//   The G queries are the rows of the A operand of mma.m16n8k16 (rows G..15 zero). Tiles of
//   kTileKeys keys of K and V go through shared memory, double-buffered with cp.async; warp w takes
//   keys 16w..16w+15 of each tile (two n-tiles of S, one k-step of P V) with its own online
//   softmax (Milakov & Gimelshein 2018) in log2 units.
//   Precision: q and P are each split into a bf16 high part and a bf16 remainder and both parts go
//   through the tensor cores, so the scores and P V carry fp32-like error (as the CUDA-core form),
//   for twice the mma the K/V stream leaves room for. K and V are bf16 cache rows: exact operands.
//   Accumulation is fp32.
// Why: one 8-warp CUDA-core block per (token, query-head pair) reads a KV head's rows once per
// pair from L2 and issues a 16-element dot product and a shuffle tree per key and head; here a
// warp's 16-key slice is DH / 4 mma for the scores and as many for P V (high and low parts), for
// all G heads at once, and each K/V row is loaded once per KV head. It wins from 64 rows on at a
// group of 4+ (bench/RESULTS.md, seventeenth session), not at one long sequence.
// The hand-written lane's v9 includes this file for warp_tile (nvcc, after flash_attention.cuh and
// device_helpers.cuh); the compiled lane's emitter pastes it into every program: src/emit/
// CMakeLists.txt embeds the text after the `#pragma once` line and the blank line that follows
// it, src/emit/cuda/prelude.cpp puts it after the device helpers (it names lg_fa's fragments and
// lg_bf16_lo). Hence the prelude's rules: no include directives, nothing from the standard
// library, names prefixed lg_.
#pragma once

namespace lg_dmma {

constexpr int kWarps = 2;              // 64 threads a block
constexpr int kTileKeys = 16 * kWarps;  // keys a tile, 16 a warp

/// A block's shared memory at head_dim DH (43.5 KB at DH = 128: static, five blocks an SM). q's
/// high and low parts, two stages of K and V tiles (rows padded by 8 elements: ldmatrix rows
/// fall in distinct banks), and the warps' (max, sum) per query row; after the loop the tiles
/// hold the warps' unnormalised outputs (out()).
template <int DH> struct Smem {
  static constexpr int RS = DH + 8;
  unsigned short q_hi[16 * RS], q_lo[16 * RS];
  unsigned short k[2][kTileKeys * RS], v[2][kTileKeys * RS];
  float m[kWarps][16], l[kWarps][16];
  /// Warp w's output row g: out()[w][g * DH + d], over the K/V tiles (free after the loop).
  __device__ float (*out())[16 * DH] { return reinterpret_cast<float (*)[16 * DH]>(&k[0][0]); }
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(lg_fa::smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/// Two fp32 values as packed bf16 high parts and packed bf16 remainders (pack_bf16x2's layout).
__device__ __forceinline__ void split_pack(float a, float b, unsigned& hi, unsigned& lo) {
  hi = lg_fa::pack_bf16x2(a, b);
  lo = lg_fa::pack_bf16x2(a - lg_bf16_lo(hi), b - __uint_as_float(hi & 0xffff0000u));
}

/// One warp's 16 keys of a K/V tile (keys key0 + n * 8 + e of its quad, as the S fragment lays
/// them out; those at or past k1 masked) against the 16 query rows: the scores on the tensor cores
/// (q's high and low parts at qh, ql, the keys' rows at kt; ldmatrix addresses of the lane), one
/// online-softmax step for rows g and g + 8 (m, l in log2 units; the lane's l is over its quad's
/// keys), and P V added into the output fragments o (V's rows at vt). A score is a * q.k, or with
/// kSoftcap b * tanh(a * q.k): the caller folds scale, the cap and log2(e) into a and b.
template <int DH, bool kSoftcap>
__device__ __forceinline__ void warp_tile(unsigned qh, unsigned ql, unsigned kt, unsigned vt, long key0, long k1,
                                          float a, float b, float& m0, float& m1, float& l0, float& l1,
                                          float (&o)[DH / 8][4]) {
  constexpr int kDimSteps = DH / 16, kDimTiles = DH / 8;
  const float neg_inf = __int_as_float(0xff800000);
  float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
  for (int kk = 0; kk < kDimSteps; ++kk) {
    unsigned b0, b1, b2, b3, qhi[4], qlo[4];
    lg_fa::ldmatrix_x4(qh + kk * 32, qhi[0], qhi[1], qhi[2], qhi[3]);
    lg_fa::ldmatrix_x4(ql + kk * 32, qlo[0], qlo[1], qlo[2], qlo[3]);
    lg_fa::ldmatrix_x4(kt + kk * 32, b0, b1, b2, b3);
    lg_fa::mma_bf16_16816(s[0], qhi, b0, b1);
    lg_fa::mma_bf16_16816(s[1], qhi, b2, b3);
    lg_fa::mma_bf16_16816(s[0], qlo, b0, b1);
    lg_fa::mma_bf16_16816(s[1], qlo, b2, b3);
  }
  float mx0 = neg_inf, mx1 = neg_inf;
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = kSoftcap ? b * tanhf(s[n][e] * a) : s[n][e] * a;
      s[n][e] = key0 + n * 8 + (e & 1) < k1 ? x : neg_inf;
      if (e < 2) mx0 = fmaxf(mx0, s[n][e]);
      else mx1 = fmaxf(mx1, s[n][e]);
    }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
  // A warp whose keys are all masked so far keeps max -inf: subtracting 0 keeps exp2 at 0.
  const float ref0 = mn0 == neg_inf ? 0.0f : mn0, ref1 = mn1 == neg_inf ? 0.0f : mn1;
  const float corr0 = lg_fa::exp2_approx(m0 - ref0), corr1 = lg_fa::exp2_approx(m1 - ref1);
  m0 = mn0;
  m1 = mn1;
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    s[n][0] = lg_fa::exp2_approx(s[n][0] - ref0);
    s[n][1] = lg_fa::exp2_approx(s[n][1] - ref0);
    s[n][2] = lg_fa::exp2_approx(s[n][2] - ref1);
    s[n][3] = lg_fa::exp2_approx(s[n][3] - ref1);
  }
  l0 = l0 * corr0 + (s[0][0] + s[0][1] + s[1][0] + s[1][1]);
  l1 = l1 * corr1 + (s[0][2] + s[0][3] + s[1][2] + s[1][3]);
  unsigned phi[4], plo[4];  // P's A fragment: the S fragments of the two n-tiles, packed
  split_pack(s[0][0], s[0][1], phi[0], plo[0]);
  split_pack(s[0][2], s[0][3], phi[1], plo[1]);
  split_pack(s[1][0], s[1][1], phi[2], plo[2]);
  split_pack(s[1][2], s[1][3], phi[3], plo[3]);
#pragma unroll
  for (int n = 0; n < kDimTiles; n += 2) {
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      o[n + u][0] *= corr0;
      o[n + u][1] *= corr0;
      o[n + u][2] *= corr1;
      o[n + u][3] *= corr1;
    }
    unsigned b0, b1, b2, b3;
    lg_fa::ldmatrix_x4_trans(vt + n * 16, b0, b1, b2, b3);
    lg_fa::mma_bf16_16816(o[n], phi, b0, b1);
    lg_fa::mma_bf16_16816(o[n + 1], phi, b2, b3);
    lg_fa::mma_bf16_16816(o[n], plo, b0, b1);
    lg_fa::mma_bf16_16816(o[n + 1], plo, b2, b3);
  }
}

/// The double-buffered tile pipeline's step t of ntiles: tile t + 1 issued into the other stage
/// (issue(tile, stage): its cp.async group), then tile t awaited, then a barrier, so tile t is in
/// shared memory for every thread of the block.
template <class Issue>
__device__ __forceinline__ void next_tile(int t, int ntiles, const Issue& issue) {
  if (t + 1 < ntiles) {
    issue(t + 1, (t + 1) & 1);
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

/// A warp's online-softmax state after warp_tile, for the block to merge: the sums l0, l1 summed
/// over the quad's keys (every lane of the quad then holds its row's), and the output fragments o
/// stored as query rows g and g + 8 (those below G) of `rows`, `stride` floats apart.
template <int DH>
__device__ __forceinline__ void store_warp_rows(float* rows, int stride, int G, const float (&o)[DH / 8][4],
                                                float& l0, float& l1) {
  const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
#pragma unroll
  for (int n = 0; n < DH / 8; ++n) {
    if (g < G) {
      rows[g * stride + n * 8 + 2 * c] = o[n][0];
      rows[g * stride + n * 8 + 2 * c + 1] = o[n][1];
    }
    if (g + 8 < G) {
      rows[(g + 8) * stride + n * 8 + 2 * c] = o[n][2];
      rows[(g + 8) * stride + n * 8 + 2 * c + 1] = o[n][3];
    }
  }
}

/// Keys k0 .. k1 - 1 (k0 < k1) of one KV head against its G <= 16 query heads, by one block of
/// kWarps warps. q(g, d): query head g of the group, element d (fp32). key_row(j): the cache row of
/// position j. kb, vb: that KV head's K and V cache rows as bf16, DH elements a row, 16-byte
/// aligned. A score is scale * q.k, or with kSoftcap softcap * tanh(scale * q.k / softcap).
/// On return (after a barrier) sm.m[w][g], sm.l[w][g] (natural-log units, sum over warp w's keys)
/// and sm.out()[w][g * DH + d] hold warp w's online-softmax state for head g < G; a warp that saw
/// no key has m = -inf and l = 0.
template <int DH, bool kSoftcap, class QF, class RowF>
__device__ void chunk(const QF& q, int G, const RowF& key_row, const unsigned short* kb, const unsigned short* vb,
                      long k0, long k1, float scale, float softcap, Smem<DH>& sm) {
  static_assert(DH % 16 == 0 && DH <= 128, "the mma form: head_dim a multiple of 16, at most 128");
  constexpr int RS = Smem<DH>::RS, kDimTiles = DH / 8, kThreads = kWarps * 32;
  constexpr int kChunks = DH / 8;  // 16-byte pieces a row
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;

  // Tile t: keys k0 + kTileKeys t + i (past k1: the chunk's last row, masked below).
  auto load_tile = [&](int t, int stage) {
    for (int i = threadIdx.x; i < kTileKeys * kChunks; i += kThreads) {
      const int key = i / kChunks, piece = i % kChunks;
      const long j = k0 + (long)t * kTileKeys + key;
      const long row = key_row(j < k1 ? j : k1 - 1);
      cp_async16(&sm.k[stage][key * RS + piece * 8], kb + row * DH + piece * 8);
      cp_async16(&sm.v[stage][key * RS + piece * 8], vb + row * DH + piece * 8);
    }
    cp_async_commit();
  };
  const int ntiles = (int)((k1 - k0 + kTileKeys - 1) / kTileKeys);
  load_tile(0, 0);

  // Query rows: head r < G split into bf16 high and low parts, zeros below.
  for (int i = threadIdx.x; i < 16 * DH; i += kThreads) {
    const int r = i / DH, d = i % DH;
    const float x = r < G ? q(r, d) : 0.0f;
    const unsigned short hi = (unsigned short)(lg_fa::pack_bf16x2(x, 0.0f) & 0xffffu);
    sm.q_hi[r * RS + d] = hi;
    sm.q_lo[r * RS + d] = (unsigned short)(lg_fa::pack_bf16x2(x - lg_bf16_lo(hi), 0.0f) & 0xffffu);
  }

  const float log2e = 1.4426950408889634f, neg_inf = __int_as_float(0xff800000);
  const float a = kSoftcap ? scale / softcap : scale * log2e, b = kSoftcap ? softcap * log2e : 0.0f;
  // ldmatrix lane offsets (bytes) as flash_attention.cuh's, the warp's 16 keys of a tile added.
  const unsigned k_lane = (unsigned)((((lane >> 4) * 8 + (lane & 7) + 16 * warp) * RS + ((lane >> 3) & 1) * 8) * 2);
  const unsigned v_lane = (unsigned)((((lane & 7) + ((lane >> 3) & 1) * 8 + 16 * warp) * RS + (lane >> 4) * 8) * 2);
  const unsigned q_lane = (unsigned)((((lane & 7) + ((lane >> 3) & 1) * 8) * RS + (lane >> 4) * 8) * 2);
  const unsigned qh = lg_fa::smem_addr(sm.q_hi) + q_lane, ql = lg_fa::smem_addr(sm.q_lo) + q_lane;
  float o[kDimTiles][4];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m0 = neg_inf, m1 = neg_inf, l0 = 0.0f, l1 = 0.0f;  // rows g and g + 8
  for (int t = 0; t < ntiles; ++t) {
    next_tile(t, ntiles, load_tile);  // tile t (and q, on the first pass) in shared memory
    const unsigned kt = lg_fa::smem_addr(sm.k[t & 1]) + k_lane, vt = lg_fa::smem_addr(sm.v[t & 1]) + v_lane;
    warp_tile<DH, kSoftcap>(qh, ql, kt, vt, k0 + (long)t * kTileKeys + 16 * warp + 2 * c, k1, a, b, m0, m1, l0, l1, o);
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  // The warp's state per query row r < G: its max (natural-log units), its sum over the quad's
  // keys, its unnormalised output.
  store_warp_rows<DH>(sm.out()[warp], DH, G, o, l0, l1);
  const float ln2 = 0.6931471805599453f;
  if (c == 0) {
    sm.m[warp][g] = m0 * ln2;  // -inf stays -inf
    sm.l[warp][g] = l0;
    sm.m[warp][g + 8] = m1 * ln2;
    sm.l[warp][g + 8] = l1;
  }
  __syncthreads();
}

}  // namespace lg_dmma
