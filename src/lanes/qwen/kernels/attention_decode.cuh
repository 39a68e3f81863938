// Decode attention (one query per head at position pos = *pos0, keys 0..pos of the sequence in the
// paged bf16 KV pool, kernels/paged.cuh), causal GQA, fp32 online softmax (Milakov & Gimelshein 2018; FlashAttention's split-KV form,
// "Flash-Decoding"). Query head h reads KV head h / (H / KV).
// Grid (H, splits): block (h, s) takes the s-th chunk of the positions counted back from the
// query's own (split 0 always holds it; the chunk length and the number of chunks come from the
// length read on the device, so one captured graph serves every position; blocks past the last
// chunk exit at once). A chunk is at least the launch's split length (min_split) long. The block's
// NW warps take kDecodeKeysPerWarp keys at a time, all their K and V loads issued before the
// math, so a chunk costs a couple of memory round trips rather than one per key. Each lane holds
// Dh / 32 contiguous elements of q and of the output (Dh = 16: half a warp, one each). A length
// that fits one chunk (v4: the lane's split length, 128 keys, covers the bench's whole context) is
// one block per head that merges its warps in shared memory and writes the bf16 output. Longer:
// each block writes its partial (max, sum, unnormalised output) and the last block of head h to
// finish (pdl.cuh: arrive_last) merges the partials and writes the output; that hand-off (a fence,
// an atomic, a re-read of the partials from L2) is what one chunk skips.
// Paging: a key's row is looked up in the sequence's block table (device memory the host fills
// before the graph launch; __ldg, so after the first key of a block it comes from L1), then its K
// and V loads are issued as before: one more dependent round trip per iteration of keys.
// EARLY (v7, the single-sequence decode graph, ROPE form): the position and block table are
// known before the PDL wait (both written at least two launches back), so each block reads them
// there, exits at once if its split is empty, and prefetches its first iterations' block-table
// entries (to L1) and K/V rows (to L2) while the QKV GEMV before it drains; after the wait those
// loads hit in cache. With 80 registers (MINB = 3 blocks of 8 warps per SM: no spills), v7 made
// the 8B batch-1 step 1% quicker than v5 and the 0.6B one 3% (bench/RESULTS.md, ninth session).
// The ROPE form (v3, the lane's decode step) reads the raw QKV projection instead of a finished
// query and a cache that already holds this position: each block does bias + qk-norm + RoPE of its
// query head in registers (the lane's 32 Dh-element slices; the rotate-half partner is 16 lanes
// away, a shuffle), the blocks of split 0 also form this position's key and value (bf16,
// as the cache holds them) and use them from registers, and one block per KV head writes them to
// the caches. The QKV GEMV before it then stores its rows and ends: its per-head hand-off (a fence,
// an atomic and a last warp's round trips to L2) cost 4.3 us per layer at 0.6B, 6.4 at 8B (v3 lab).
// The BATCH form (v5, the lane's batched decode step) is the same kernel over B sequences with one
// decode token each: grid (H, splits, B), block (h, s, b) reads sequence b's row of the projection,
// its position pos0[b] and its row of the block tables (table_stride ints apart); its partials and
// counters are its own, so the B sequences of a launch never meet.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/paged.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kDecodeSplits = 32;      // most chunks per head (the grid's y extent at most)
constexpr int kDecodeKeysPerWarp = 8;  // keys whose loads a warp issues together

/// The slice of a head_dim-DH row one lane holds: EPL contiguous elements from lane * EPL.
template <int DH> struct DecodeSlice {
  static constexpr int EPL = DH >= 32 ? DH / 32 : 1;
  static constexpr int kActiveLanes = DH >= 32 ? 32 : DH;
};

/// The lane's slice of a cached bf16 row kept as loaded, converted at use (half the registers of
/// fp32, so that more keys' loads fit in flight): EPL bf16 in .x then .y, little end first; 0 in
/// an inactive lane.
template <int DH>
__device__ __forceinline__ uint2 load_bf16_raw(const bf16* row) {
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const int lane = threadIdx.x & 31;
  if (lane >= DecodeSlice<DH>::kActiveLanes) return make_uint2(0u, 0u);
  if constexpr (EPL == 4) return __ldcg(reinterpret_cast<const uint2*>(row + 4 * lane));
  else if constexpr (EPL == 2) return make_uint2(__ldcg(reinterpret_cast<const unsigned*>(row + 2 * lane)), 0u);
  else return make_uint2(__ldcg(reinterpret_cast<const unsigned short*>(row + lane)), 0u);
}

/// Element e of a raw slice as fp32 (exact).
__device__ __forceinline__ float raw_elem(const uint2& u, int e) {
  const unsigned w = e < 2 ? u.x : u.y;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}

/// A slice of values that are bf16 already (rounded), packed as load_bf16_raw holds them.
template <int EPL>
__device__ __forceinline__ uint2 pack_raw(const float (&v)[EPL]) {
  unsigned w[2] = {0u, 0u};
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    w[e / 2] |= (__float_as_uint(v[e]) >> 16) << (16 * (e & 1));
  return make_uint2(w[0], w[1]);
}

/// What the decode attention reads and writes (the kernel's arguments).
struct DecodeAttnParams {
  const float* q_all;    // f32 [H, DH], RoPE applied; ROPE form: the raw projection [(H+2KV), DH]
  const bf16* k_cache;   // bf16 [KV, rows, DH]: this layer's pool
  const bf16* v_cache;
  const int* block_table;  // the sequence's blocks (covering positions 0 .. *pos0)
  int H, KV, rows;       // rows: pool rows per KV head
  int block_shift;       // log2 of the block size
  float scale;           // 1 / sqrt(DH)
  int min_split;         // shortest chunk of positions one block takes
  float* partial;        // f32 [H, kDecodeSplits, DH + 2]
  int* counters;         // H ints, zero between launches
  bf16* out;             // bf16 [H * DH]
  // ROPE form only: where this position's K/V rows go (the same caches), f32 [(H+2KV)*DH] or null,
  // f32 [DH] or null (twice), f32 [DH/2], qk-norm eps.
  bf16* k_store;
  bf16* v_store;
  const float* bias;
  const float* q_norm;
  const float* k_norm;
  const float* inv_freq;
  float eps;
  // BATCH form only: floats between the sequences' rows of q_all, ints between their block-table rows.
  int q_stride;
  int table_stride;
  const int* row_map;  // BATCH: [B], sequence b's row of q_all and out (a step's token rows), or null (row b)
  int prefetch_iters;  // a warp's iterations prefetch_split covers (kDecodePrefetchIters)
};

/// Sequence b's view of a BATCH launch (splits: the grid's y extent): its projection row, block
/// table, partials, counters and output row. (row_map: host data copied before the step's first
/// kernel, so readable before the PDL wait.)
template <int DH>
__device__ __forceinline__ DecodeAttnParams at_sequence(DecodeAttnParams p, int b, int splits) {
  const int row = p.row_map ? p.row_map[b] : b;
  p.q_all += static_cast<size_t>(row) * p.q_stride;
  p.block_table += static_cast<size_t>(b) * p.table_stride;
  p.partial += static_cast<size_t>(b) * p.H * splits * (DH + 2);
  p.counters += static_cast<size_t>(b) * p.H;
  p.out += static_cast<size_t>(row) * p.H * DH;
  return p;
}

/// The chunking of positions 0..len-1 into at most max_splits splits of at least min_chunk
/// positions (the same in every block of a launch, since every block reads the same length on
/// the device). Split s covers [len - (s+1) chunk, len - s chunk) clipped at 0: split 0 always
/// holds the query's position, so it is known to have keys before the length is read.
struct DecodeSplits {
  int len, chunk, n;
  __device__ DecodeSplits(int length, int min_chunk, int max_splits)
      : len(length),
        chunk(max(min_chunk, (length + max_splits - 1) / max_splits)),
        n((length + chunk - 1) / chunk) {}
};

/// Iterations of a warp's keys (kDecodeKeysPerWarp each) the EARLY form prefetches by default
/// (DecodeAttnParams::prefetch_iters; lab knob LG_QWEN_PREFETCH_ITERS). 2 until session 26; since a
/// batched decode's attention starts at the QKV GEMM's launch completion (cuda::note_untriggered_launch),
/// none is quicker: H200, 8B, 32 sequences of 512 positions 5.72-5.75 -> 5.65-5.67 ms a step, 64:
/// 6.95-6.97 -> 6.82-6.83, 16 of 2,048 6.18-6.22 -> 6.13; one sequence and the 0.6B shape within
/// noise (bench/RESULTS.md). 8 iterations or the whole split lost more (64 x 512: 7.22-7.25).
constexpr int kDecodePrefetchIters = 0;

/// EARLY form, before the PDL wait: the K and V rows of keys [k0, k1) this warp's first
/// p.prefetch_iters iterations of attn_decode_item read go to L2, and their block-table
/// entries to L1 (the table loads that address the prefetches), one 128-byte line per lane and
/// prefetch. Prefetches change no memory, so the row of the position this launch writes is safe
/// to fetch early too (the K/V loads are .cg, from L2, where the write lands).
template <int DH, int NW>
__device__ __forceinline__ void prefetch_split(const DecodeAttnParams& p, int h, int k0, int k1) {
  constexpr int R = kDecodeKeysPerWarp;
  constexpr int kLines = (DH * 2 + 127) / 128;  // 128-byte lines of one K (or V) row
  constexpr int kPerIter = R * 2 * kLines;      // lines of a warp's iteration: K and V of R keys
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t base = static_cast<size_t>(h / (p.H / p.KV)) * static_cast<size_t>(p.rows) * DH;
#pragma unroll 2
  for (int it = 0; it < p.prefetch_iters; ++it) {
    const int j = k0 + (it * NW + warp) * R;
    if (j >= k1) break;
    for (int i = lane; i < kPerIter; i += 32) {
      const int key = j + i / (2 * kLines);
      if (key >= k1) break;
      const bf16* cache = (i / kLines) % 2 ? p.v_cache : p.k_cache;
      const bf16* line = cache + base + static_cast<size_t>(paged_row(p.block_table, key, p.block_shift)) * DH +
                         (i % kLines) * 64;
      asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
    }
  }
}

/// Element d of one head's output from its nsplits partials (pp: split s's at pp + s * (DH + 2):
/// DH unnormalised outputs, then the split's max and sum), in batches of kMergeBatch: every load
/// of a batch is issued before any is used, so a short context (nsplits <= 8) costs one round trip
/// to L2, not one per split.
template <int DH>
__device__ __forceinline__ float merge_split_partials(const float* pp, int nsplits, int d) {
  constexpr int kMergeBatch = 8;
  float gm = kNegInf, gl = 0.f, go = 0.f;
  for (int s0 = 0; s0 < nsplits; s0 += kMergeBatch) {
    float ms[kMergeBatch], ls[kMergeBatch], os[kMergeBatch];
#pragma unroll
    for (int i = 0; i < kMergeBatch; ++i) {
      ms[i] = kNegInf, ls[i] = 0.f, os[i] = 0.f;
      if (s0 + i < nsplits) {
        const float* ps = pp + (s0 + i) * (DH + 2);
        ms[i] = __ldcg(ps + DH);
        ls[i] = __ldcg(ps + DH + 1);
        os[i] = __ldcg(ps + d);
      }
    }
    float bm = gm;
#pragma unroll
    for (int i = 0; i < kMergeBatch; ++i)
      if (ls[i] != 0.f) bm = fmaxf(bm, ms[i]);
    const float corr = bm == gm ? 1.f : __expf(gm - bm);  // both -inf: nothing seen yet
    gl *= corr;
    go *= corr;
#pragma unroll
    for (int i = 0; i < kMergeBatch; ++i) {
      if (ls[i] == 0.f) continue;  // a split that saw no key
      const float c = __expf(ms[i] - bm);
      gl += ls[i] * c;
      go += os[i] * c;
    }
    gm = bm;
  }
  return go / gl;  // split 0 holds a key: gl > 0
}

/// Element d of head h's result from one block (bm, bl, bo: its max, sum and unnormalised output
/// over its keys): the output itself when the launch's positions are one split, else the partial
/// of split `split` (stride: partials per head) for the last block to merge.
template <int DH>
__device__ __forceinline__ void store_block_result(const DecodeAttnParams& p, int h, int stride, int split, int nsplits,
                                                   int d, float bm, float bl, float bo) {
  if (nsplits == 1) {
    p.out[static_cast<size_t>(h) * DH + d] = __float2bfloat16(bo / bl);  // split 0 holds a key: bl > 0
    return;
  }
  float* mine = p.partial + (static_cast<size_t>(h) * stride + split) * (DH + 2);
  mine[d] = bo;
  if (d == 0) {
    mine[DH] = bm;
    mine[DH + 1] = bl;
  }
}

/// Whether this block is the last of nsplits > 1 to finish (arrive_last on *counter), once every
/// thread has stored its partials; every thread of the block calls it.
__device__ __forceinline__ bool last_split_block(int* counter, int nsplits) {
  __shared__ bool s_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = arrive_last(counter, 1, nsplits);
  __syncthreads();
  return s_last;
}

/// The raw K and V slices (load_bf16_raw) of keys j .. j + R - 1 of a chunk ending at k1, from the
/// KV head's pool rows at `base`; a key past the chunk reads the chunk's last row (masked by
/// online_softmax_update), and key `key_in_regs` comes from kp / vp. All R block-table loads are
/// issued together, then all 2R K/V loads, so an iteration costs two round trips, not 2R.
template <int DH, int R>
__device__ __forceinline__ void load_keys(const DecodeAttnParams& p, size_t base, int j, int k1, int key_in_regs,
                                          uint2 kp, uint2 vp, uint2 (&kr)[R], uint2 (&vr)[R]) {
  int prow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) prow[r] = paged_row(p.block_table, min(j + r, k1 - 1), p.block_shift);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (min(j + r, k1 - 1) == key_in_regs) {
      kr[r] = kp;
      vr[r] = vp;
    } else {
      const size_t row = base + static_cast<size_t>(prow[r]) * DH;
      kr[r] = load_bf16_raw<DH>(p.k_cache + row);
      vr[r] = load_bf16_raw<DH>(p.v_cache + row);
    }
  }
}

/// One query's fp32 online softmax (Milakov & Gimelshein 2018) over keys j .. j + R - 1 (those at
/// k1 or past it masked): the lane's query slice q against the raw K slices (scores summed across
/// the warp, times scale), then m, l and the lane's output slice acc updated with the V slices.
template <int EPL, int R>
__device__ __forceinline__ void online_softmax_update(const float (&q)[EPL], const uint2 (&kr)[R], const uint2 (&vr)[R],
                                                      int j, int k1, float scale, float& m, float& l,
                                                      float (&acc)[EPL]) {
  float s[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float d = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) d = fmaf(q[e], raw_elem(kr[r], e), d);
    const float score = lg_warp_sum(d) * scale;  // every lane shuffles, masked or not
    s[r] = j + r < k1 ? score : kNegInf;
  }
  float m_new = m;
#pragma unroll
  for (int r = 0; r < R; ++r) m_new = fmaxf(m_new, s[r]);  // finite: key j is in the chunk
  const float corr = __expf(m - m_new);                      // m = -inf first: exp(-inf) = 0
  l *= corr;
#pragma unroll
  for (int e = 0; e < EPL; ++e) acc[e] *= corr;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float pr = __expf(s[r] - m_new);  // masked key: exp(-inf) = 0
    l += pr;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[e] = fmaf(pr, raw_elem(vr[r], e), acc[e]);
  }
  m = m_new;
}

/// This position's key and value slices (kp after RoPE, vp with its bias) rounded to bf16 as the
/// cache holds them: written to the pools at `row` by a writer lane, and returned packed
/// (load_bf16_raw's form) for the attention to use from registers.
template <int DH>
__device__ __forceinline__ void round_store_position_kv(const DecodeAttnParams& p, size_t row, bool writer,
                                                        const float (&kp)[DecodeSlice<DH>::EPL],
                                                        const float (&vp)[DecodeSlice<DH>::EPL], uint2& kraw,
                                                        uint2& vraw) {
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const int lane = threadIdx.x & 31;
  float kr[EPL], vr[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const bf16 kb = __float2bfloat16(kp[e]), vb = __float2bfloat16(vp[e]);
    kr[e] = __bfloat162float(kb);
    vr[e] = __bfloat162float(vb);
    if (writer) {
      p.k_store[row + lane * EPL + e] = kb;
      p.v_store[row + lane * EPL + e] = vb;
    }
  }
  kraw = pack_raw<EPL>(kr);
  vraw = pack_raw<EPL>(vr);
}

/// One (head h, split) item by the whole block of NW warps (every thread calls it). q: the lane's
/// slice of the query (fp32, RoPE applied). Key `key_in_regs` (or none: -1) is taken from kp / vp,
/// the lane's slices of this position's key and value (bf16, packed as load_bf16_raw holds them),
/// instead of the cache. A single split
/// writes out itself; otherwise the last split of head h to finish merges all of them into out.
template <int DH, int NW, bool BATCH>
__device__ void attn_decode_item(const DecodeAttnParams& p, const DecodeSplits& sp, int h, int split,
                                 const float (&q)[DecodeSlice<DH>::EPL], uint2 kp, uint2 vp, int key_in_regs) {
  constexpr int EPL = DecodeSlice<DH>::EPL, R = kDecodeKeysPerWarp;
  __shared__ float s_m[NW], s_l[NW], s_o[NW][DH];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  const int nsplits = sp.n;
  const int stride = BATCH ? static_cast<int>(gridDim.y) : kDecodeSplits;  // partials per head
  const int k1 = sp.len - split * sp.chunk, k0 = max(0, k1 - sp.chunk);
  const size_t base = static_cast<size_t>(h / (p.H / p.KV)) * static_cast<size_t>(p.rows) * DH;

  float m = kNegInf, l = 0.f, acc[EPL] = {};
  for (int j = k0 + warp * R; j < k1; j += NW * R) {
    uint2 kr[R], vr[R];
    load_keys<DH, R>(p, base, j, k1, key_in_regs, kp, vp, kr, vr);
    online_softmax_update<EPL, R>(q, kr, vr, j, k1, p.scale, m, l, acc);
  }

  // Merge the warps; thread d < DH then holds the block's partial for element d.
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
  if (active) {
#pragma unroll
    for (int e = 0; e < EPL; ++e) s_o[warp][lane * EPL + e] = acc[e];
  }
  __syncthreads();
  const int d = threadIdx.x;
  if (d < DH) {
    float bm = kNegInf;
    for (int w = 0; w < NW; ++w) bm = fmaxf(bm, s_m[w]);
    float bl = 0.f, bo = 0.f;
    for (int w = 0; w < NW; ++w) {
      if (s_l[w] == 0.f) continue;  // a warp that saw no key (and an empty split: all of them)
      const float c = __expf(s_m[w] - bm);
      bl += s_l[w] * c;
      bo += s_o[w][d] * c;
    }
    store_block_result<DH>(p, h, stride, split, nsplits, d, bm, bl, bo);
  }
  if (nsplits == 1) return;  // the same in every thread
  if (!last_split_block(p.counters + h, nsplits) || d >= DH) return;

  p.out[static_cast<size_t>(h) * DH + d] =
      __float2bfloat16(merge_split_partials<DH>(p.partial + static_cast<size_t>(h) * stride * (DH + 2), nsplits, d));
}

/// The ROPE form's per-element constants for the lane's slice (weights: no kernel writes them,
/// so they may be loaded before the PDL wait): q bias of query head h, k and v biases of KV head
/// kvh (0 without biases), the q/k norm weights (1 without qk-norm) and RoPE's inverse frequency.
template <int DH>
struct RopeConstants {
  static constexpr int EPL = DecodeSlice<DH>::EPL;
  float bq[EPL], bk[EPL], bv[EPL], qn[EPL], kn[EPL], fr[EPL];
  __device__ __forceinline__ void load(const float* bias, const float* q_norm, const float* k_norm,
                                       const float* inv_freq, int H, int KV, int h, int kvh) {
    const int lane = threadIdx.x & 31;
    const bool active = lane < DecodeSlice<DH>::kActiveLanes;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane * EPL + e, i = d < DH / 2 ? d : d - DH / 2;
      bq[e] = active && bias ? bias[static_cast<size_t>(h) * DH + d] : 0.f;
      bk[e] = active && bias ? bias[static_cast<size_t>(H + kvh) * DH + d] : 0.f;
      bv[e] = active && bias ? bias[static_cast<size_t>(H + KV + kvh) * DH + d] : 0.f;
      qn[e] = active && q_norm ? q_norm[d] : 1.f;
      kn[e] = active && k_norm ? k_norm[d] : 1.f;
      fr[e] = active ? inv_freq[i] : 0.f;
    }
  }
};

/// ROPE form: the lane's slice of head `head` of the raw projection, plus bias, qk-norm (nw
/// non-null) and RoPE with the lane's (cos, sin); the math of qkv_head_epilogue / rope_kv_kernel.
template <int DH>
__device__ __forceinline__ void rope_head_slice(float (&v)[DecodeSlice<DH>::EPL], const float (&bias)[DecodeSlice<DH>::EPL],
                                                const float (&nw)[DecodeSlice<DH>::EPL], bool norm,
                                                const float (&cs)[DecodeSlice<DH>::EPL],
                                                const float (&sn)[DecodeSlice<DH>::EPL], float eps) {
  constexpr int EPL = DecodeSlice<DH>::EPL, kHalfLanes = DecodeSlice<DH>::kActiveLanes / 2;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int e = 0; e < EPL; ++e) v[e] += bias[e];
  if (norm) {
    float ss = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) ss = fmaf(v[e], v[e], ss);  // inactive lanes hold 0
    const float inv = rsqrtf(lg_warp_sum(ss) / static_cast<float>(DH) + eps);
#pragma unroll
    for (int e = 0; e < EPL; ++e) v[e] = v[e] * inv * nw[e];
  }
  const bool low = (lane & kHalfLanes) == 0;  // element d < DH / 2: its partner is d + DH / 2
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const float other = __shfl_xor_sync(0xffffffffu, v[e], kHalfLanes);
    v[e] = low ? v[e] * cs[e] - other * sn[e] : v[e] * cs[e] + other * sn[e];
  }
}

/// Grid (H, splits <= kDecodeSplits), NW warps per block: block (h, s) is item (h, s). ROPE, EARLY:
/// see the top of the file. MINB blocks per SM bound the registers: 32 / NW (64 registers a
/// thread, K/V kept as loaded, load_bf16_raw: 1024 threads an SM; the many splits of a long
/// context took half the waves they took at 103 registers, v4 lab, 8B position 2000, 16 warps:
/// 25.5 us against 17.6), or 3 blocks of 8 warps (80 registers, v7: no spills; the launcher then
/// keeps a long context's splits to whole waves).
template <int DH, bool ROPE, int NW, bool BATCH = false, bool EARLY = false, int MINB = 32 / NW>
__global__ void __launch_bounds__(NW * 32, MINB) attn_decode_kernel(const DecodeAttnParams p0, const int* pos0) {
  static_assert(!EARLY || (ROPE && !BATCH), "EARLY is the single-sequence ROPE form's");
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const DecodeAttnParams p = BATCH ? at_sequence<DH>(p0, static_cast<int>(blockIdx.z), static_cast<int>(gridDim.y)) : p0;
  const int lane = threadIdx.x & 31, h = blockIdx.x, kvh = h / (p.H / p.KV);
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  const int split = blockIdx.y;
  const bool holds_pos = split == 0;  // the chunk that ends at the query's position
  // ROPE: the per-element constants are weights (no kernel writes them). Split 0, which always has
  // keys, loads them before the wait; the other splits only once they know they have keys (a
  // short context leaves most of them empty, and an empty block should cost nothing but the
  // read of the position), together with the projection: one round trip either way.
  RopeConstants<DH> c;
  auto load_constants = [&] {
    if constexpr (ROPE) c.load(p.bias, p.q_norm, p.k_norm, p.inv_freq, p.H, p.KV, h, kvh);
  };
  // The position and the chunking; false: the block is past the last chunk (not counted, not merged).
  int pos = 0;
  DecodeSplits sp(1, 1, 1);
  auto locate = [&] {
    pos = pos0[BATCH ? blockIdx.z : 0];
    sp = DecodeSplits(pos + 1, p.min_split, static_cast<int>(gridDim.y));
    return split < sp.n;
  };
  // EARLY (see the top of the file): locate and prefetch before the wait. Otherwise the position
  // may come from the previous kernel, so it is read after the wait.
  if constexpr (EARLY) {
    if (!locate()) return;
    const int k1 = sp.len - split * sp.chunk;
    prefetch_split<DH, NW>(p, h, max(0, k1 - sp.chunk), k1);
  }
  if (holds_pos) load_constants();
  grid_dependency_wait();
  launch_dependents();
  if (EARLY && !holds_pos) load_constants();
  // The projection rows this block needs: split 0 reads them together with the position, so the
  // two L2 round trips overlap.
  float q[EPL], kp[EPL] = {}, vp[EPL] = {};
  auto load_projection = [&] {
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane * EPL + e;
      q[e] = active ? __ldcg(p.q_all + static_cast<size_t>(h) * DH + d) : 0.f;
      if (ROPE && holds_pos) {
        kp[e] = active ? __ldcg(p.q_all + static_cast<size_t>(p.H + kvh) * DH + d) : 0.f;
        vp[e] = active ? __ldcg(p.q_all + static_cast<size_t>(p.H + p.KV + kvh) * DH + d) : 0.f;
      }
    }
  };
  if (EARLY || holds_pos) load_projection();
  if constexpr (!EARLY) {
    if (!locate()) return;
    if (!holds_pos) {
      load_constants();
      load_projection();
    }
  }
  int key_in_regs = -1;
  uint2 kraw = make_uint2(0u, 0u), vraw = make_uint2(0u, 0u);
  if constexpr (ROPE) {
    float cs[EPL], sn[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) sincosf(static_cast<float>(pos) * c.fr[e], &sn[e], &cs[e]);
    rope_head_slice<DH>(q, c.bq, c.qn, p.q_norm != nullptr, cs, sn, p.eps);
    if (holds_pos) {
      rope_head_slice<DH>(kp, c.bk, c.kn, p.k_norm != nullptr, cs, sn, p.eps);
      const bool writer = h % (p.H / p.KV) == 0 && threadIdx.x < 32 && active;
      const size_t row = pool_offset<DH>(kvh, p.rows, paged_row(p.block_table, pos, p.block_shift));
#pragma unroll
      for (int e = 0; e < EPL; ++e) vp[e] += c.bv[e];
      round_store_position_kv<DH>(p, row, writer, kp, vp, kraw, vraw);
      key_in_regs = pos;
    }
  }
  attn_decode_item<DH, NW, BATCH>(p, sp, h, split, q, kraw, vraw, key_in_regs);
}

}  // namespace lg::qwen::dev
