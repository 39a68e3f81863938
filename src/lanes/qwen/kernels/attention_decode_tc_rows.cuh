// Batched decode attention on the tensor cores with K/V fragments straight from the cache (v10).
// v8's rows form (attention_decode_long.cuh) does its dot products on the CUDA cores with a
// shuffle tree per key and head; v9 (attention_decode_gqa_tc.cuh) puts them on the tensor cores
// but stages K/V tiles through shared memory behind barriers. Here each warp streams its own
// 16-key tiles from the paged cache into registers, already in mma fragment order, keeps the next
// tile's loads in flight, and waits on no other warp until the block's end:
//   scores  S^T[16 keys][8] = K Q^T     mma.m16n8k16, A = 16 cache rows, B = the G <= 8 queries
//   P V     O^T[DH][8]     += V^T P^T   A = V^T, B = P^T, both by movmatrix.trans (8x8 b16 blocks)
// The head dimension is the contraction of the scores, so it may be read in any order both
// operands share: lane (r, c) = (lane / 4, lane % 4) loads elements c DH/4 .. (c+1) DH/4 - 1 of
// keys r and r + 8 (16-byte loads), and k-step s takes its words 2s and 2s + 1. In P V the head
// dimension is the output's row index: block b of V's 8x8 blocks holds word b of each lane, and
// O^T's row r of m-tile t is element (r / 2) DH/4 + 4t + (r % 2) (+ 2 for rows 8-15).
// Precision as v9: q and P are split into a bf16 high part and a bf16 remainder, both through the
// tensor cores (scores and P V with fp32-like error); K and V are the cache's bf16, exact operands;
// fp32 accumulation and online softmax (Milakov & Gimelshein 2018) in base-2 units.
// What it bought (H200, 8B, bench/RESULTS.md, session 24): a third of v8's instructions (Nsight,
// 16 sequences of 512 positions: 3.1 M against 9.1 M) but not a quicker launch there: both are
// bound by load latency, not issue. Its K/V stream is quicker (the step's slope from 1,024 to 2,048
// positions: about 4.0 TB/s against 2.75) and its fixed cost a launch higher (about 9.7 us against
// 7.5 at 16 positions), so the plan takes it past 1,024 positions at 16-64 sequences.
#pragma once

#include "kernels/decode_attention_mma.cuh"
#include "lanes/qwen/kernels/attention_decode_long.cuh"

namespace lg::qwen::dev {

/// The 8x8 b16 matrix whose row lane / 4, columns 2 (lane % 4) and + 1, are in x, transposed: the
/// same lane's word of the transpose (movmatrix, sm_75 and later).
__device__ __forceinline__ unsigned transpose8x8(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

/// Word w (elements 2w, 2w + 1) of a lane's quarter row held as uint4s.
template <int N>
__device__ __forceinline__ unsigned quarter_word(const uint4 (&u)[N], int w) {
  const uint4& v = u[w / 4];
  return (w & 3) == 0 ? v.x : (w & 3) == 1 ? v.y : (w & 3) == 2 ? v.z : v.w;
}

/// Grid (KV, splits, B), NW warps a block: block (kvh, split, b) serves all G query heads of KV head
/// kvh for sequence b (at_sequence), keys of its split; warp w takes 16-key tiles w, w + NW, ...
/// of the split and keeps the next tile's loads in flight while it computes one. The prologue and
/// epilogue are v8's (form_block_queries, merge_block_outputs): the ROPE form, the position's K/V
/// written by split 0, partials and the last-block merge per KV head (counters[kvh]).
template <int DH, int G, int NW>
__global__ void __launch_bounds__(NW * 32, 8 / NW) attn_decode_tc_rows_kernel(const DecodeAttnParams p0,
                                                                             const int* pos0) {
  constexpr int KS = DH / 16;  // k-steps of the scores; m-tiles of P V
  constexpr int CU = DH / 32;  // uint4 of a lane's quarter row
  static_assert(DH == 64 || DH == 128, "quarters of 16 or 32 elements");
  static_assert(G >= 1 && G <= 8, "the queries are the 8 columns of S^T");
  __shared__ __align__(16) float s_q[G][DH];
  __shared__ float s_kv[2][DH];
  __shared__ float s_m[NW][G], s_l[NW][G], s_o[NW][G][DH];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, split = blockIdx.y, kvh = blockIdx.x, h0 = kvh * G;
  const bool holds_pos = split == 0;
  const DecodeAttnParams p = at_sequence<DH>(p0, blockIdx.z, gridDim.y);
  const int stride = static_cast<int>(gridDim.y), pos = pos0[blockIdx.z];
  const DecodeSplits sp(pos + 1, p.min_split, stride);
  if (split >= sp.n) return;
  const int k1 = sp.len - split * sp.chunk, k0 = max(0, k1 - sp.chunk);
  prefetch_split<DH, NW>(p, h0, k0, k1);
  const int pos_row = holds_pos ? paged_row(p.block_table, pos, p.block_shift) : 0;
  const int r = lane >> 2, c = lane & 3;
  const int key_in_smem = holds_pos ? pos : -1;
  unsigned qh[KS][2], ql[KS][2];  // the queries as the scores' B operand (filled after the prologue)
  // This position's K/V quarter as the cache will hold it (s_kv: bf16 values as floats).
  auto position_quarter = [&](int which, uint4 (&u)[CU]) {
    unsigned w[CU * 4];
#pragma unroll
    for (int i = 0; i < CU * 4; ++i) w[i] = bf16_pair_bits(&s_kv[which][c * (DH / 4) + 2 * i]);
#pragma unroll
    for (int u4 = 0; u4 < CU; ++u4) u[u4] = make_uint4(w[4 * u4], w[4 * u4 + 1], w[4 * u4 + 2], w[4 * u4 + 3]);
  };
  const size_t base = static_cast<size_t>(kvh) * static_cast<size_t>(p.rows) * DH + c * (DH / 4);
  // The pool rows of keys j0 + r and j0 + r + 8 of a tile (past the chunk: its last key, masked
  // when used), looked up a tile ahead of their loads (each tile starts a block-table entry).
  auto pages = [&](int j0, int (&prow)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) prow[h] = paged_row(p.block_table, min(j0 + r + 8 * h, k1 - 1), p.block_shift);
  };
  auto load_tile = [&](const int (&prow)[2], uint4 (&kt)[2][CU], uint4 (&vt)[2][CU]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const size_t row = base + static_cast<size_t>(prow[h]) * DH;
      const uint4* kp = reinterpret_cast<const uint4*>(p.k_cache + row);
      const uint4* vp = reinterpret_cast<const uint4*>(p.v_cache + row);
#pragma unroll
      for (int u4 = 0; u4 < CU; ++u4) {
        kt[h][u4] = __ldcg(kp + u4);
        vt[h][u4] = __ldcg(vp + u4);
      }
    }
  };
  const float scale2 = p.scale * 1.4426950408889634f;
  // O^T's C fragments: acc[t][0 / 2] head 2c, [1 / 3] head 2c + 1 (rows r / r + 8 of m-tile t).
  float acc[KS][4], m[2] = {kNegInf, kNegInf}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int t = 0; t < KS; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
  auto use_tile = [&](int j0, uint4 (&kt)[2][CU], uint4 (&vt)[2][CU]) {
    // This position's row was loaded before this block wrote it: its bf16 values from s_kv.
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (min(j0 + r + 8 * h, k1 - 1) == key_in_smem) {
        position_quarter(0, kt[h]);
        position_quarter(1, vt[h]);
      }
    float sc[4] = {0.f, 0.f, 0.f, 0.f};  // S^T: [key r][heads 2c, 2c+1], [key r+8][same]
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const unsigned a[4] = {quarter_word(kt[0], 2 * s), quarter_word(kt[1], 2 * s), quarter_word(kt[0], 2 * s + 1),
                             quarter_word(kt[1], 2 * s + 1)};
      lg_fa::mma_bf16_16816(sc, a, qh[s][0], qh[s][1]);
      lg_fa::mma_bf16_16816(sc, a, ql[s][0], ql[s][1]);
    }
    const bool in0 = j0 + r < k1, in1 = j0 + r + 8 < k1;
    float sv[4] = {in0 ? sc[0] * scale2 : kNegInf, in0 ? sc[1] * scale2 : kNegInf, in1 ? sc[2] * scale2 : kNegInf,
                   in1 ? sc[3] * scale2 : kNegInf};
    float mx[2] = {fmaxf(sv[0], sv[2]), fmaxf(sv[1], sv[3])};
#pragma unroll
    for (int o = 4; o < 32; o <<= 1)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], o));
    float pr[4];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float mn = fmaxf(m[hh], mx[hh]);  // finite: key j0 is in the chunk
      const float corr = lg_fa::exp2_approx(m[hh] - mn);
      pr[hh] = lg_fa::exp2_approx(sv[hh] - mn);
      pr[2 + hh] = lg_fa::exp2_approx(sv[2 + hh] - mn);
      l[hh] = l[hh] * corr + pr[hh] + pr[2 + hh];  // this lane's keys; summed over the warp at the end
#pragma unroll
      for (int t = 0; t < KS; ++t) {
        acc[t][hh] *= corr;
        acc[t][2 + hh] *= corr;
      }
      m[hh] = mn;
    }
    // P^T as B: the 8x8 blocks [keys 0-7 | 8-15][heads] transposed to [head r][keys 2c, 2c + 1].
    unsigned ph[2], pl[2];
    lg_dmma::split_pack(pr[0], pr[1], ph[0], pl[0]);
    lg_dmma::split_pack(pr[2], pr[3], ph[1], pl[1]);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      ph[i] = transpose8x8(ph[i]);
      pl[i] = transpose8x8(pl[i]);
    }
#pragma unroll
    for (int t = 0; t < KS; ++t) {
      const unsigned a[4] = {transpose8x8(quarter_word(vt[0], 2 * t)), transpose8x8(quarter_word(vt[0], 2 * t + 1)),
                             transpose8x8(quarter_word(vt[1], 2 * t)), transpose8x8(quarter_word(vt[1], 2 * t + 1))};
      lg_fa::mma_bf16_16816(acc[t], a, ph[0], ph[1]);
      lg_fa::mma_bf16_16816(acc[t], a, pl[0], pl[1]);
    }
  };
  // The first two tiles' loads go out before the PDL wait: the cache rows before this position
  // and the block table were written by earlier steps (the position's own row is replaced in
  // use_tile), so their round trips overlap the previous launch's tail and the prologue.
  constexpr int kStep = 16 * NW;
  int j0 = k0 + 16 * warp, prow[2];
  uint4 kt[2][CU], vt[2][CU], kn[2][CU], vn[2][CU];
  pages(j0, prow);
  if (j0 < k1) load_tile(prow, kt, vt);
  pages(j0 + kStep, prow);
  if (j0 + kStep < k1) load_tile(prow, kn, vn);
  pages(j0 + 2 * kStep, prow);
  grid_dependency_wait();
  launch_dependents();
  form_block_queries<DH, G, NW>(p, pos, pos_row, kvh, h0, holds_pos, true, s_q, s_kv);
  // The queries as the scores' B operand (n = head r, zero past G), high parts and remainders.
#pragma unroll
  for (int s = 0; s < KS; ++s)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int d = c * (DH / 4) + 4 * s + 2 * j;
      const float a = r < G ? s_q[r][d] : 0.f, b = r < G ? s_q[r][d + 1] : 0.f;
      lg_dmma::split_pack(a, b, qh[s][j], ql[s][j]);
    }
  for (; j0 < k1; j0 += kStep) {
    use_tile(j0, kt, vt);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int u4 = 0; u4 < CU; ++u4) kt[h][u4] = kn[h][u4], vt[h][u4] = vn[h][u4];
    if (j0 + 2 * kStep < k1) load_tile(prow, kn, vn);
    pages(j0 + 3 * kStep, prow);
  }
#pragma unroll
  for (int hh = 0; hh < 2; ++hh)
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], o);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int g = 2 * c + hh;
    if (g >= G) continue;
    if (r == 0) {
      s_m[warp][g] = m[hh] * 0.6931471805599453f;  // natural units for the merges
      s_l[warp][g] = l[hh];
    }
#pragma unroll
    for (int t = 0; t < KS; ++t) {
      const int d = (r >> 1) * (DH / 4) + 4 * t + (r & 1);
      s_o[warp][g][d] = acc[t][hh];
      s_o[warp][g][d + 2] = acc[t][2 + hh];
    }
  }
  merge_block_outputs<DH, G, NW>(p, h0, stride, split, sp.n, p.counters + kvh, s_m, s_l, s_o);
}

}  // namespace lg::qwen::dev
