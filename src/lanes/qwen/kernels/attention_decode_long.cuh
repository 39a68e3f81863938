// Decode attention by KV head for long contexts (v8; the single-sequence decode graph from
// long_decode_from(H / KV) positions on, HandwrittenQwenLane::run_decode). The per-query-head kernel (v7,
// attention_decode.cuh) has each of the G = H / KV query heads of a KV head read that head's K/V
// rows itself: G times the cache's bytes from L2 a step (8B, G = 4, 32,768 positions: ~19 GB, 3.4
// ms of a 7.7 ms step). Here block (kvh, split) takes every query head of KV head kvh: its warps
// load each key's K and V slices once, as v7's do (R keys at a time, all loads issued before the
// math, lane l holding elements l * DH/32 ...; R is v7's 8, or 4 for G = 4: see the kernel), and
// score them against the G queries held in registers. The rest is v7's: EARLY (position, block
// table, the first keys' K/V rows prefetched to L2 before the PDL wait), the ROPE form (the raw
// QKV projection in, this position's K/V formed in split 0's block and written to the caches by
// its first warp), fp32 online softmax (Milakov & Gimelshein 2018) and the split-KV merge of
// Flash-Decoding (the last block of a KV head to finish merges its G heads' partials:
// arrive_last on counters[kvh]).
#pragma once

#include "lanes/qwen/kernels/attention_decode.cuh"

namespace lg::qwen::dev {

/// Grid (KV, splits <= kDecodeSplits), NW warps a block; G query heads per KV head, DH >= 32.
/// Registers: G query slices and accumulators (2 G DH / 32) beside the K/V slices of R keys;
/// bounded for 2 blocks of 8 warps per SM (128 registers). Shared memory: the warps' partials, NW x G x DH floats.
template <int DH, int G, int NW>
__global__ void __launch_bounds__(NW * 32, 2) attn_decode_long_kernel(const DecodeAttnParams p, const int* pos0) {
  static_assert(DH >= 32, "every lane holds DH / 32 elements");
  // Keys a warp loads together: v7's 8, or 4 for 4 query heads, whose queries and accumulators
  // would otherwise spill (ptxas: 64 bytes at 128 registers for DH = 128).
  constexpr int EPL = DH / 32, R = G >= 4 ? kDecodeKeysPerWarp / 2 : kDecodeKeysPerWarp;
  __shared__ float s_m[NW][G], s_l[NW][G], s_o[NW][G][DH];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, kvh = blockIdx.x, split = blockIdx.y;
  const bool holds_pos = split == 0;

  // Before the wait (see attention_decode.cuh, EARLY): where the keys are.
  const int pos = *pos0;
  const DecodeSplits sp(pos + 1, p.min_split, static_cast<int>(gridDim.y));
  if (split >= sp.n) return;  // past the end: not counted, not merged
  const int k1 = sp.len - split * sp.chunk, k0 = max(0, k1 - sp.chunk);
  prefetch_split<DH, NW>(p, kvh * G, k0, k1);
  const int pos_row = holds_pos ? paged_row(p.block_table, pos, p.block_shift) : 0;
  grid_dependency_wait();
  launch_dependents();

  // The G queries (bias, qk-norm, RoPE of the raw projection) and, in split 0, this position's K/V.
  float cs[EPL], sn[EPL], qn[EPL], kn[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int d = lane * EPL + e, i = d < DH / 2 ? d : d - DH / 2;
    sincosf(static_cast<float>(pos) * p.inv_freq[i], &sn[e], &cs[e]);
    qn[e] = p.q_norm ? p.q_norm[d] : 1.f;
    kn[e] = p.k_norm ? p.k_norm[d] : 1.f;
  }
  float q[G][EPL];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const size_t row = static_cast<size_t>(kvh * G + g) * DH;
    float bq[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      q[g][e] = __ldcg(p.q_all + row + lane * EPL + e);
      bq[e] = p.bias ? p.bias[row + lane * EPL + e] : 0.f;
    }
    rope_head_slice<DH>(q[g], bq, qn, p.q_norm != nullptr, cs, sn, p.eps);
  }
  uint2 kraw = make_uint2(0u, 0u), vraw = make_uint2(0u, 0u);
  if (holds_pos) {
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
    round_store_position_kv<DH>(p, pool_offset<DH>(kvh, p.rows, pos_row), warp == 0, kp, vp, kraw, vraw);
  }
  const int key_in_regs = holds_pos ? pos : -1;

  // The keys, R at a time per warp: each K/V slice loaded once and used by the G queries.
  const size_t base = static_cast<size_t>(kvh) * static_cast<size_t>(p.rows) * DH;
  float m[G], l[G], acc[G][EPL];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = kNegInf;
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[g][e] = 0.f;
  }
  for (int j = k0 + warp * R; j < k1; j += NW * R) {
    uint2 kr[R], vr[R];
    load_keys<DH, R>(p, base, j, k1, key_in_regs, kraw, vraw, kr, vr);
#pragma unroll
    for (int g = 0; g < G; ++g) online_softmax_update<EPL, R>(q[g], kr, vr, j, k1, p.scale, m[g], l[g], acc[g]);
  }

  // Merge the warps: entry (g, d) of the block's partial per thread, then one split writes the
  // output itself, several write partials for the last block of the KV head to merge.
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      s_m[warp][g] = m[g];
      s_l[warp][g] = l[g];
    }
#pragma unroll
    for (int e = 0; e < EPL; ++e) s_o[warp][g][lane * EPL + e] = acc[g][e];
  }
  __syncthreads();
  const int nsplits = sp.n;
  for (int i = threadIdx.x; i < G * DH; i += NW * 32) {
    const int g = i / DH, d = i % DH, h = kvh * G + g;
    float bm = kNegInf;
    for (int w = 0; w < NW; ++w) bm = fmaxf(bm, s_m[w][g]);
    float bl = 0.f, bo = 0.f;
    for (int w = 0; w < NW; ++w) {
      if (s_l[w][g] == 0.f) continue;  // a warp that saw no key
      const float c = __expf(s_m[w][g] - bm);
      bl += s_l[w][g] * c;
      bo += s_o[w][g][d] * c;
    }
    store_block_result<DH>(p, h, kDecodeSplits, split, nsplits, d, bm, bl, bo);
  }
  if (nsplits == 1) return;  // the same in every thread
  if (!last_split_block(p.counters + kvh, nsplits)) return;
  for (int i = threadIdx.x; i < G * DH; i += NW * 32) {
    const int h = kvh * G + i / DH, d = i % DH;
    p.out[static_cast<size_t>(h) * DH + d] = __float2bfloat16(
        merge_split_partials<DH>(p.partial + static_cast<size_t>(h) * kDecodeSplits * (DH + 2), nsplits, d));
  }
}

}  // namespace lg::qwen::dev
