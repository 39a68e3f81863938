// Decode attention by KV head on the tensor cores (v9, the batched decode step's): v6's blocks
// (attention_decode_gqa.cuh: one per (KV head, split of the positions, sequence), its G = H / KV
// query heads together, the ROPE form, the same partials and last-block merge across splits), with
// the scores and P V as mma.m16n8k16 (flash_attention.cuh's fragments) instead of a lane per key;
// a warp's step over a tile is lg_dmma::warp_tile, which the compiled lane's tensor-core split-KV
// form (src/kernels/decode_attention_mma.cuh) runs too.
// Why: counted from the source (not from SASS or a stall counter), v6 issues ~650 instructions a
// warp for each 32-key tile (a lane's 128-element dot product from shared memory, then 32
// shuffled probabilities times its slice of V), and here a warp's 16-key slice takes ~100. Issue,
// not the K/V stream, was the suspected limit at many long sequences; v9 is 11% quicker a step
// at 128 sequences of 1,024 positions, where it still streams K/V at only 2.92 TB/s (Nsight
// Compute, bench/RESULTS.md session 15).
//   The G queries are the rows of the A operand (M = 16: rows G..15 are zero and never stored).
//   A block of NW warps (4; 2 as a lab knob) takes tiles of 16 NW keys of K and V through shared
//   memory, double-buffered with cp.async as v6; warp w takes keys 16w..16w+15 of each tile (two n-tiles of S, one k-step
//   of P V) and keeps its own online softmax (m, l in log2 units, Milakov & Gimelshein 2018); at
//   the end the warps' states meet in shared memory.
//   Precision: the mma operands are bf16, so q and P are each split into a bf16 high part and a
//   bf16 remainder (x = hi + lo, 16 bits of mantissa between them) and both parts go through the
//   tensor cores: the scores and P V carry the error of fp32 q and P (as v6) rather than of bf16
//   ones (as the prefill flash kernel), for twice the mma, which the K/V stream leaves room for.
//   K and V are bf16 in the cache: exact operands. Accumulation is fp32.
// Partials (split > 1): per (sequence, query head, split) the unnormalised output, the max (log2
// units) and the sum, merged by the last block of (sequence, KV head) to finish (arrive_last).
#pragma once

#include "kernels/flash_attention.cuh"
#include "lanes/qwen/kernels/attention_decode_gqa.cuh"
// After lg_fa and the device helpers, which it names and cannot include (an emitted program's text).
#include "kernels/decode_attention_mma.cuh"  // NOLINT(build/include_order)

namespace lg::qwen::dev {

/// Dynamic shared memory of a v9 block of NW warps: q's high and low parts [16][DH + 8] and two
/// stages of K and V tiles [16 NW][DH + 8] (bf16); the warps' merge reuses the tiles (NW x 16 x
/// (DH + 2) floats).
template <int DH, int NW>
constexpr size_t gqa_tc_smem_bytes() {
  return (2 * 16 + 2 * 2 * 16 * static_cast<size_t>(NW)) * (DH + 8) * 2;
}

/// x as bf16 (round to nearest even) and what that leaves, as bf16: x ~ hi + lo to 2^-16.
__device__ __forceinline__ void split_bf16(float x, bf16& hi, bf16& lo) {
  hi = __float2bfloat16(x);
  lo = __float2bfloat16(x - __bfloat162float(hi));
}

/// Grid (KV, splits <= kGqaMaxSplits, B), kTcWarps * 32 threads, gqa_tc_smem_bytes<DH, kTcWarps>()
/// of dynamic shared memory; G = H / KV <= 16. Tiles of 16 kTcWarps keys.
template <int DH, int kTcWarps>
__global__ void __launch_bounds__(kTcWarps * 32) attn_decode_gqa_tc_kernel(const GqaDecodeParams p) {
  constexpr int kTcTileKeys = 16 * kTcWarps;  // 16 keys a warp
  constexpr int EPL = DecodeSlice<DH>::EPL, RS = DH + 8;
  constexpr int kDimTiles = DH / 8, kThreads = kTcWarps * 32;
  static_assert(DH % 16 == 0, "v9: head_dim a multiple of 16");
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* s_qhi = reinterpret_cast<bf16*>(smem);  // [16][RS]
  bf16* s_qlo = s_qhi + 16 * RS;
  bf16* s_k = s_qlo + 16 * RS;  // [2][64][RS]
  bf16* s_v = s_k + 2 * kTcTileKeys * RS;
  __shared__ bool s_last;

  const int G = p.H / p.KV;
  const int kvh = blockIdx.x, split = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  const int* bt = p.block_table + static_cast<size_t>(b) * p.table_stride;
  const bf16* kc = p.k_cache + pool_offset<DH>(kvh, p.rows, 0);
  const bf16* vc = p.v_cache + pool_offset<DH>(kvh, p.rows, 0);

  grid_dependency_wait();
  launch_dependents();
  const GqaChunk<DH> ch(p, b, split);
  if (ch.empty(split)) return;  // past the end: not counted, not merged
  const int pos = ch.pos, qrow = ch.qrow, k0 = ch.k0, k1 = ch.k1;
  const float* qkv = ch.qkv;
  const DecodeSplits& sp = ch.sp;

  // Keys k0 + 16 NW t + j (past k1: the chunk's last row, masked below), all threads' cp.async.
  auto load_tile = [&](int t, int stage) {
    gqa_load_tile<DH, kTcTileKeys>(bt, p.block_shift, kc, vc, k0 + t * kTcTileKeys, k1,
                                   s_k + stage * kTcTileKeys * RS, s_v + stage * kTcTileKeys * RS, kThreads);
  };
  const int ntiles = (k1 - k0 + kTcTileKeys - 1) / kTcTileKeys;
  const bool holds_pos = split == 0;
  // Split 0 writes this position's K/V before it reads them, in its last tile. Iteration t of the
  // loop issues tile t + 1 before its barrier, so with three tiles or more the last is issued
  // after iteration 0's barrier, which follows the write: tile 0 may go out now. Shorter chunks
  // issue it after a barrier of their own.
  const bool early = !holds_pos || ntiles > 2;
  if (early) load_tile(0, 0);

  // Query rows of the A operand: head kvh * G + r for r < G (bias, qk-norm, RoPE in fp32 as v6,
  // then split in two bf16 parts), zeros below. Split 0 forms the key and value at pos (warp 0).
  float cs[EPL], sn[EPL];
  for (int r = warp; r < 16; r += kTcWarps) {
    float q[EPL] = {};
    if (r < G) {
      RopeConstants<DH> k;
      k.load(p.bias, p.q_norm, p.k_norm, p.inv_freq, p.H, p.KV, kvh * G + r, kvh);
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        q[e] = active ? __ldcg(qkv + static_cast<size_t>(kvh * G + r) * DH + lane * EPL + e) : 0.f;
        sincosf(static_cast<float>(pos) * k.fr[e], &sn[e], &cs[e]);
      }
      rope_head_slice<DH>(q, k.bq, k.qn, p.q_norm != nullptr, cs, sn, p.eps);
      if (r == 0 && holds_pos) gqa_write_pos_kv<DH>(p, ch, bt, kvh, k, cs, sn);
    }
#pragma unroll
    for (int e = 0; e < EPL; ++e)
      if (active) split_bf16(q[e], s_qhi[r * RS + lane * EPL + e], s_qlo[r * RS + lane * EPL + e]);
  }
  if (!early) {
    __syncthreads();  // the block's K/V writes are visible to its own cp.async reads (L2) after this
    load_tile(0, 0);
  }

  const float scale_log2 = p.scale * 1.4426950408889634f, neg_inf = __int_as_float(0xff800000);
  // ldmatrix lane offsets (bytes) as flash_attention.cuh's, the warp's 16 keys of a tile added.
  const unsigned k_lane =
      static_cast<unsigned>((((lane >> 4) * 8 + (lane & 7) + 16 * warp) * RS + ((lane >> 3) & 1) * 8) * 2);
  const unsigned v_lane =
      static_cast<unsigned>((((lane & 7) + ((lane >> 3) & 1) * 8 + 16 * warp) * RS + (lane >> 4) * 8) * 2);
  // q's fragments are read from shared memory at each use (not held: 64 more registers would
  // leave two blocks an SM, not three).
  const unsigned q_lane = static_cast<unsigned>((((lane & 7) + ((lane >> 3) & 1) * 8) * RS + (lane >> 4) * 8) * 2);
  const unsigned qh = lg_fa::smem_addr(s_qhi) + q_lane, ql = lg_fa::smem_addr(s_qlo) + q_lane;
  float o[kDimTiles][4] = {};
  float m0 = neg_inf, m1 = neg_inf, l0 = 0.f, l1 = 0.f;  // rows g and g + 8
  for (int t = 0; t < ntiles; ++t) {
    lg_dmma::next_tile(t, ntiles, load_tile);  // tile t (and q, on the first pass) in shared memory
    const unsigned kt = lg_fa::smem_addr(s_k + (t & 1) * kTcTileKeys * RS) + k_lane;
    const unsigned vt = lg_fa::smem_addr(s_v + (t & 1) * kTcTileKeys * RS) + v_lane;
    lg_dmma::warp_tile<DH, false>(qh, ql, kt, vt, k0 + t * kTcTileKeys + 16 * warp + 2 * c, k1, scale_log2, 0.f, m0,
                                  m1, l0, l1, o);
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  // The warps' states meet in shared memory (the tiles are free): per warp and query row r < G,
  // its max, its sum (over the quad's keys first) and its unnormalised output.
  constexpr int WS = DH + 2;  // a warp row: DH outputs, then m, l
  float* s_m = reinterpret_cast<float*>(s_k);  // [kTcWarps][16][WS]
  float* mine = s_m + (warp * 16) * WS;
  lg_dmma::store_warp_rows<DH>(mine, WS, G, o, l0, l1);
  if (c == 0) {
    if (g < G) mine[g * WS + DH] = m0, mine[g * WS + DH + 1] = l0;
    if (g + 8 < G) mine[(g + 8) * WS + DH] = m1, mine[(g + 8) * WS + DH + 1] = l1;
  }
  __syncthreads();

  // Thread i: element d of query row r, for (r, d) = divmod(i, DH) over the block. Warp 0 always
  // saw key k0, so the block's max is finite.
  const int splits = static_cast<int>(gridDim.y);
  float* part = p.partial + static_cast<size_t>(b) * p.H * splits * (DH + 2);
  for (int i = threadIdx.x; i < G * DH; i += kThreads) {
    const int r = i / DH, d = i % DH, h = kvh * G + r;
    float bm = neg_inf;
#pragma unroll
    for (int w = 0; w < kTcWarps; ++w) bm = fmaxf(bm, s_m[(w * 16 + r) * WS + DH]);
    float bl = 0.f, bo = 0.f;
#pragma unroll
    for (int w = 0; w < kTcWarps; ++w) {
      const float* row = s_m + (w * 16 + r) * WS;
      const float f = lg_fa::exp2_approx(row[DH] - bm);
      bl = fmaf(row[DH + 1], f, bl);
      bo = fmaf(row[d], f, bo);
    }
    if (sp.n == 1) {
      p.out[(static_cast<size_t>(qrow) * p.H + h) * DH + d] = __float2bfloat16(bo / bl);
    } else {
      float* ps = part + (static_cast<size_t>(h) * splits + split) * (DH + 2);
      ps[d] = bo;
      if (d == 0) ps[DH] = bm, ps[DH + 1] = bl;
    }
  }
  if (sp.n == 1) return;
  __threadfence();  // this thread's partials, before thread 0 counts the block in
  __syncthreads();
  if (threadIdx.x == 0) s_last = arrive_last(p.counters + static_cast<size_t>(b) * p.KV + kvh, 1, sp.n);
  __syncthreads();
  if (!s_last) return;

  // The last block of (b, kvh): every element of its G heads summed over the splits (loads that
  // do not wait on one another, from L2).
  for (int i = threadIdx.x; i < G * DH; i += kThreads) {
    const int r = i / DH, d = i % DH, h = kvh * G + r;
    const float* ph = part + static_cast<size_t>(h) * splits * (DH + 2);
    float gm = neg_inf;
    for (int s0 = 0; s0 < sp.n; ++s0) gm = fmaxf(gm, __ldcg(ph + s0 * (DH + 2) + DH));
    float gl = 0.f, go = 0.f;
#pragma unroll 4
    for (int s0 = 0; s0 < sp.n; ++s0) {
      const float* ps = ph + s0 * (DH + 2);
      const float f = lg_fa::exp2_approx(__ldcg(ps + DH) - gm);
      gl = fmaf(__ldcg(ps + DH + 1), f, gl);
      go = fmaf(__ldcg(ps + d), f, go);
    }
    p.out[(static_cast<size_t>(qrow) * p.H + h) * DH + d] = __float2bfloat16(go / gl);
  }
}

}  // namespace lg::qwen::dev
