// Decode attention by KV head for long contexts (v8; the single-sequence decode graph from
// long_decode_from(H / KV) positions on, HandwrittenQwenLane::run_decode), and over a batch the
// batched decode step's rows form up to two waves of blocks (decode_attention_batch_plan). The
// per-query-head kernel (v7, attention_decode.cuh) has each of the G = H / KV query heads of a KV
// head read that head's K/V rows itself: G times the cache's bytes from L2 a step (8B, G = 4,
// 32,768 positions: ~19 GB, 3.4 ms of a 7.7 ms step). Here block (KV head, part, split) takes QG of
// them (G, or 2 with each K/V row read G / 2 times, from L2 after the first) in rows of 16-byte
// slices: a lane holds 8 contiguous elements of a row, DH / 8 lanes a key, so one warp-wide load
// covers 32 / (DH / 8) keys and a score's sum takes log2(DH / 8) shuffles for all of them. The
// first v8 held 4 elements a lane, a key a warp: 5 shuffles for every key and head, and Nsight
// Compute found it bound by its instructions at 32,768 positions (8B: 1.42x the step's floor there,
// this form 1.29-1.30x; bench/RESULTS.md, seventeenth session). The compiled lane's first split-KV
// form has the same layout. The rest is v7's: EARLY (position, block table, the first keys' K/V
// rows prefetched to L2 before the PDL wait), the ROPE form (the raw QKV projection in; split 0's
// blocks form this position's K/V, the first of them writes the caches), fp32 online softmax
// (Milakov & Gimelshein 2018) and the split-KV merge of Flash-Decoding (the last block of a (KV
// head, part) to finish merges its heads' partials: arrive_last on counters[blockIdx.x]).
#pragma once

#include "kernels/flash_attention.cuh"
#include "lanes/qwen/kernels/attention_decode.cuh"

namespace lg::qwen::dev {

/// Elements 0 and 1 of `f` (bf16 values held as floats: s_kv) as one word of two bf16, the
/// cache's layout: the position's K/V rows as the loads of other rows find them.
__device__ __forceinline__ unsigned bf16_pair_bits(const float* f) {
  return (__float_as_uint(f[0]) >> 16) | (__float_as_uint(f[1]) & 0xffff0000u);
}

/// Element e (0..7) of a 16-byte slice of a bf16 K or V row, as a float.
__device__ __forceinline__ float slice_elem(const uint4& u, int e) {
  const unsigned w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}

/// This position's K and V rows (s_kv, formed by form_block_queries) as lane slice ln's 16 bytes
/// each, for the rows layout's keys that are this position.
template <int DH>
__device__ __forceinline__ void position_slices(const float (&s_kv)[2][DH], int ln, uint4& kpos, uint4& vpos) {
  unsigned w[2][4];
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[c][i] = bf16_pair_bits(&s_kv[c][ln * 8 + 2 * i]);
  kpos = make_uint4(w[0][0], w[0][1], w[0][2], w[0][3]);
  vpos = make_uint4(w[1][0], w[1][1], w[1][2], w[1][3]);
}

/// A warp's end of the rows layout (v8): the online-softmax states of its lane groups (DH / 8
/// lanes a key; m in base-2 units) merged by shuffles, then left for merge_block_outputs in s_m
/// (natural units), s_l and s_o.
template <int DH, int QG, int NW>
__device__ __forceinline__ void warp_rows_state(float (&m)[QG], float (&l)[QG], float (&acc)[QG][8],
                                                float (&s_m)[NW][QG], float (&s_l)[NW][QG],
                                                float (&s_o)[NW][QG][DH]) {
  constexpr int LK = DH / 8;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane / LK, ln = lane % LK;
#pragma unroll
  for (int o = LK; o < 32; o <<= 1)
#pragma unroll
    for (int g = 0; g < QG; ++g) {
      const float mo = __shfl_xor_sync(0xffffffffu, m[g], o), lo = __shfl_xor_sync(0xffffffffu, l[g], o);
      const float mx = fmaxf(m[g], mo), mu = mx == kNegInf ? 0.f : mx;
      const float cs = lg_fa::exp2_approx(m[g] - mu), co = lg_fa::exp2_approx(mo - mu);
      l[g] = l[g] * cs + lo * co;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * cs + __shfl_xor_sync(0xffffffffu, acc[g][e], o) * co;
      m[g] = mx;
    }
#pragma unroll
  for (int g = 0; g < QG; ++g) {
    if (lane == 0) {
      s_m[warp][g] = m[g] * 0.6931471805599453f;  // natural units for the merges
      s_l[warp][g] = l[g];
    }
    if (sub == 0)
#pragma unroll
      for (int e = 0; e < 8; ++e) s_o[warp][g][ln * 8 + e] = acc[g][e];
  }
}

/// The prologue of a block serving query heads h0 .. h0 + QG - 1 of KV head kvh (v8, v10): warp w
/// forms query heads h0 + w, h0 + w + NW, ... from the raw projection (bias, q-norm, RoPE at `pos`) into s_q;
/// in split 0 (holds_pos) warp QG % NW forms this position's K and V, which the writer block (one
/// per KV head) stores to the caches at pool row pos_row, and leaves them in s_kv rounded to bf16
/// as the cache holds them (the other blocks of split 0 may not see the cache rows yet). Every
/// thread calls it; it ends with a barrier.
template <int DH, int QG, int NW>
__device__ __forceinline__ void form_block_queries(const DecodeAttnParams& p, int pos, int pos_row, int kvh, int h0,
                                                   bool holds_pos, bool writer, float (&s_q)[QG][DH],
                                                   float (&s_kv)[2][DH]) {
  constexpr int EPL = DH / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kv_warp = QG % NW;
  if (warp < QG || (holds_pos && warp == kv_warp)) {
    float cs[EPL], sn[EPL], qn[EPL], kn[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane * EPL + e, i = d < DH / 2 ? d : d - DH / 2;
      sincosf(static_cast<float>(pos) * p.inv_freq[i], &sn[e], &cs[e]);
      qn[e] = p.q_norm ? p.q_norm[d] : 1.f;
      kn[e] = p.k_norm ? p.k_norm[d] : 1.f;
    }
    for (int g = warp; g < QG; g += NW) {  // more heads than warps: v10's 2-warp blocks at a group of 4
      const size_t row = static_cast<size_t>(h0 + g) * DH;
      float q[EPL], bq[EPL];
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        q[e] = __ldcg(p.q_all + row + lane * EPL + e);
        bq[e] = p.bias ? p.bias[row + lane * EPL + e] : 0.f;
      }
      rope_head_slice<DH>(q, bq, qn, p.q_norm != nullptr, cs, sn, p.eps);
#pragma unroll
      for (int e = 0; e < EPL; ++e) s_q[g][lane * EPL + e] = q[e];
    }
    if (holds_pos && warp == kv_warp) {
      const size_t krow = static_cast<size_t>(p.H + kvh) * DH, vrow = static_cast<size_t>(p.H + p.KV + kvh) * DH;
      float kp[EPL], vp[EPL], bk[EPL];
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        const int d = lane * EPL + e;
        kp[e] = __ldcg(p.q_all + krow + d);
        vp[e] = __ldcg(p.q_all + vrow + d) + (p.bias ? p.bias[vrow + d] : 0.f);
        bk[e] = p.bias ? p.bias[krow + d] : 0.f;
      }
      rope_head_slice<DH>(kp, bk, kn, p.k_norm != nullptr, cs, sn, p.eps);
      uint2 kraw, vraw;
      round_store_position_kv<DH>(p, pool_offset<DH>(kvh, p.rows, pos_row), writer, kp, vp, kraw, vraw);
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        s_kv[0][lane * EPL + e] = raw_elem(kraw, e);
        s_kv[1][lane * EPL + e] = raw_elem(vraw, e);
      }
    }
  }
  __syncthreads();
}

/// The epilogue of such a block: the NW warps' states (s_m in natural units, s_l, s_o unnormalised;
/// a warp with s_l == 0 saw no key) merged into the block's result for each of its QG heads, which
/// is the output when the launch is one split (nsplits == 1), else split `split`'s partial (stride:
/// partials a head), and the last of the nsplits blocks to arrive on *counter merges the partials
/// into the output. Every thread calls it; it starts with a barrier.
template <int DH, int QG, int NW>
__device__ __forceinline__ void merge_block_outputs(const DecodeAttnParams& p, int h0, int stride, int split,
                                                    int nsplits, int* counter, const float (&s_m)[NW][QG],
                                                    const float (&s_l)[NW][QG], const float (&s_o)[NW][QG][DH]) {
  __syncthreads();
  for (int i = threadIdx.x; i < QG * DH; i += NW * 32) {
    const int g = i / DH, d = i % DH, h = h0 + g;
    float bm = kNegInf;
    for (int w = 0; w < NW; ++w) bm = fmaxf(bm, s_m[w][g]);
    float bl = 0.f, bo = 0.f;
    for (int w = 0; w < NW; ++w) {
      if (s_l[w][g] == 0.f) continue;  // a warp that saw no key
      const float c = __expf(s_m[w][g] - bm);
      bl += s_l[w][g] * c;
      bo += s_o[w][g][d] * c;
    }
    store_block_result<DH>(p, h, stride, split, nsplits, d, bm, bl, bo);
  }
  if (nsplits == 1) return;
  if (!last_split_block(counter, nsplits)) return;
  for (int i = threadIdx.x; i < QG * DH; i += NW * 32) {
    const int h = h0 + i / DH, d = i % DH;
    p.out[static_cast<size_t>(h) * DH + d] = __float2bfloat16(
        merge_split_partials<DH>(p.partial + static_cast<size_t>(h) * stride * (DH + 2), nsplits, d));
  }
}

/// Grid (KV x G / QG, splits <= kDecodeSplits), NW warps a block, DH 64 or 128. BATCH (the batched
/// decode step's rows form, BatchAttnForm::kRows): grid (KV x G / QG, splits, B), block z serves
/// sequence z (at_sequence: its projection row, block table, partials with gridDim.y splits a head,
/// counters, output row; its position pos0[z]), as v5's BATCH form. The queries (and,
/// in split 0, this position's K/V) are formed in a lane-per-4-elements layout, a warp a head
/// (rope_head_slice), and handed to the row layout through shared memory. Registers: 8 QG for
/// the accumulators, 8 more for the queries at 2 heads, 8 R for the rounds' raw K/V (twice at 4
/// heads: PIPE); bounded for 2 blocks of 8 warps an SM (128 registers).
template <int DH, int G, int QG, int NW, bool BATCH = false>
__global__ void __launch_bounds__(NW * 32, 2) attn_decode_long_kernel(const DecodeAttnParams p0, const int* pos0) {
  // Rounds of loads a warp's iteration: 4 at 2 heads a block, 2 at 4, whose next iteration's are
  // in flight too (PIPE below; ptxas: 124-128 registers at DH = 128, no spill).
  constexpr int LK = DH / 8, KPW = 32 / LK, R = QG >= 4 ? 2 : 4, kParts = G / QG;
  static_assert(DH == 64 || DH == 128, "16-byte slices of 8 elements, 8 or 16 lanes a key");
  static_assert(G % QG == 0 && QG <= NW, "a block's heads divide the group, a warp forms each");
  __shared__ __align__(16) float s_q[QG][DH];
  __shared__ float s_kv[2][DH];
  __shared__ float s_m[NW][QG], s_l[NW][QG], s_o[NW][QG][DH];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, split = blockIdx.y;
  const int kvh = blockIdx.x / kParts, h0 = kvh * G + blockIdx.x % kParts * QG;
  const bool holds_pos = split == 0;

  // BATCH: the sequence's view (host-written rows: readable before the PDL wait).
  const DecodeAttnParams p = BATCH ? at_sequence<DH>(p0, blockIdx.z, gridDim.y) : p0;
  const int stride = BATCH ? static_cast<int>(gridDim.y) : kDecodeSplits;  // partials per head
  const int pos = pos0[BATCH ? blockIdx.z : 0];
  const DecodeSplits sp(pos + 1, p.min_split, static_cast<int>(gridDim.y));
  if (split >= sp.n) return;
  const int k1 = sp.len - split * sp.chunk, k0 = max(0, k1 - sp.chunk);
  prefetch_split<DH, NW>(p, h0, k0, k1);
  const int pos_row = holds_pos ? paged_row(p.block_table, pos, p.block_shift) : 0;
  grid_dependency_wait();
  launch_dependents();

  form_block_queries<DH, QG, NW>(p, pos, pos_row, kvh, h0, holds_pos, h0 == kvh * G, s_q, s_kv);

  // The lane's slice: elements ln * 8 .. ln * 8 + 7 of key sub of each warp-wide load. PIPE (4
  // heads a block, 2 rounds of loads an iteration) reads the queries from shared memory at each
  // use instead of holding them (32 registers), so that the next iteration's loads are in flight
  // while this one's are used. H200, 8B (bench/RESULTS.md, eighteenth session): 64 sequences of
  // 512 positions 7.19-7.25 -> 6.99-7.01 ms a step, of 1,024 8.82-8.87 -> 8.32-8.34; one of
  // 32,768 6.02-6.04 -> 5.96-5.97. At 2 heads a block (4 rounds already) it lost 1.5-3% (0.6B).
  constexpr bool PIPE = QG >= 4;
  const int sub = lane / LK, ln = lane % LK;
  float q[PIPE ? 1 : QG][8], acc[QG][8], m[QG], l[QG];
#pragma unroll
  for (int g = 0; g < QG; ++g) {
    m[g] = kNegInf;
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if constexpr (!PIPE) q[g][e] = s_q[g][ln * 8 + e];
      acc[g][e] = 0.f;
    }
  }
  uint4 kpos = make_uint4(0u, 0u, 0u, 0u), vpos = kpos;  // this position's slices (split 0)
  if (holds_pos) position_slices<DH>(s_kv, ln, kpos, vpos);
  const int key_in_smem = holds_pos ? pos : -1;
  const size_t base = static_cast<size_t>(kvh) * static_cast<size_t>(p.rows) * DH + ln * 8;
  // The warp's R rounds of keys from j0 (past the chunk: its last key, masked when used).
  auto load_rounds = [&](int j0, uint4 (&kr)[R], uint4 (&vr)[R]) {
    int prow[R];
#pragma unroll
    for (int r = 0; r < R; ++r) prow[r] = paged_row(p.block_table, min(j0 + r * KPW + sub, k1 - 1), p.block_shift);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int key = min(j0 + r * KPW + sub, k1 - 1);
      const size_t row = base + static_cast<size_t>(prow[r]) * DH;
      kr[r] = key == key_in_smem ? kpos : __ldcg(reinterpret_cast<const uint4*>(p.k_cache + row));
      vr[r] = key == key_in_smem ? vpos : __ldcg(reinterpret_cast<const uint4*>(p.v_cache + row));
    }
  };
  // The online softmax of every head over those keys, in base-2 units: scale times log2(e) in the
  // score's multiply and ex2.approx for the exponentials (each __expf adds a multiply and a
  // denormal fix-up); the warps' states leave in natural units. H200, 8B, one sequence
  // of 32,768 positions: about 6.00 -> 5.83 ms a step, compared across calls (bench/RESULTS.md,
  // session 21, call 8; the compiled loop's own A/B in one call: 1-2%).
  const float scale2 = p.scale * 1.4426950408889634f;
  auto use_rounds = [&](int j0, const uint4 (&kr)[R], const uint4 (&vr)[R]) {
#pragma unroll
    for (int g = 0; g < QG; ++g) {
      float qg[8];
      if constexpr (PIPE) {
        const float4 qa = *reinterpret_cast<const float4*>(&s_q[g][ln * 8]);
        const float4 qb = *reinterpret_cast<const float4*>(&s_q[g][ln * 8 + 4]);
        qg[0] = qa.x, qg[1] = qa.y, qg[2] = qa.z, qg[3] = qa.w, qg[4] = qb.x, qg[5] = qb.y, qg[6] = qb.z, qg[7] = qb.w;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) qg[e] = q[g][e];
      }
      float sc[R], mx = m[g];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float d = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) d = fmaf(qg[e], slice_elem(kr[r], e), d);
#pragma unroll
        for (int o = LK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        sc[r] = j0 + r * KPW + sub < k1 ? d * scale2 : kNegInf;
        mx = fmaxf(mx, sc[r]);
      }
      const float mu = mx == kNegInf ? 0.f : mx;  // a lane group that has seen no key yet
      const float corr = lg_fa::exp2_approx(m[g] - mu);
      l[g] *= corr;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= corr;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float pr = lg_fa::exp2_approx(sc[r] - mu);
        l[g] += pr;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(pr, slice_elem(vr[r], e), acc[g][e]);
      }
      m[g] = mx;
    }
  };
  constexpr int kStep = NW * KPW * R;  // keys of one iteration of the block's warps
  if constexpr (PIPE) {
    int j0 = k0 + warp * KPW * R;
    uint4 kr[R], vr[R];
    if (j0 < k1) load_rounds(j0, kr, vr);
    for (; j0 < k1; j0 += kStep) {
      uint4 kn[R], vn[R];
      if (j0 + kStep < k1) load_rounds(j0 + kStep, kn, vn);
      use_rounds(j0, kr, vr);
#pragma unroll
      for (int r = 0; r < R; ++r) kr[r] = kn[r], vr[r] = vn[r];
    }
  } else {
    for (int j0 = k0 + warp * KPW * R; j0 < k1; j0 += kStep) {
      uint4 kr[R], vr[R];
      load_rounds(j0, kr, vr);
      use_rounds(j0, kr, vr);
    }
  }
  warp_rows_state<DH, QG, NW>(m, l, acc, s_m, s_l, s_o);
  merge_block_outputs<DH, QG, NW>(p, h0, stride, split, sp.n, p.counters + blockIdx.x, s_m, s_l, s_o);
}

}  // namespace lg::qwen::dev
