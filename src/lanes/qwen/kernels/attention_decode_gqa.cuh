// Decode attention by KV head (v6, the batched decode step's): one block per (KV head, split of
// the positions, sequence) serves all G = H / KV query heads that read that KV head (GQA), so
// each K/V row is read from memory once per step instead of once per query head, and the rows
// come through shared memory in tiles of 32 keys, double-buffered with cp.async: the next tile's
// loads are in flight while this one is used (the v5 kernel, attention_decode.cuh, a block per
// query head, read K/V at 1.3-1.4 TB/s at 32k positions on the H200: bench/RESULTS.md, fifth
// session).
//   Warp g is query head kvh * G + g. Scores: lane j takes key j of the tile, its dot product with
//   the query over the whole head from shared memory (rows padded by 16 bytes, so the 8 lanes of
//   a 16-byte phase hit distinct banks). Online softmax in fp32 per warp (Milakov & Gimelshein
//   2018). P V: lane d holds DecodeSlice<DH> elements of the output; the 32 probabilities are
//   passed by shuffles.
// ROPE form as v3-v5: the blocks form their queries from the raw QKV projection (bias, qk-norm,
// RoPE in fp32), and the block of split 0, whose chunk ends at the query's position, forms the
// key and value there, writes them to the caches (bf16) before it loads its tiles.
// Splits: DecodeSplits over gridDim.y, each sequence's chunks from its own length; partials
// (max, sum, unnormalised output) per (sequence, query head, split), merged by the last block of
// the (sequence, KV head) to finish (arrive_last), as in v5.
// Row map (the rows path's mixed steps, HandwrittenQwenLane::run_rows): with `row_map` set, entry b
// of the launch reads projection row row_map[b] and writes output row row_map[b] of a step's T token rows;
// its position pos[b], block-table row b, partials and counters stay per entry. launch_rope_kv
// has already written the K/V of that position there; split 0 forms and writes them again (the
// same math, so a rewrite of the same values, idempotent up to the last bit of the qk-norm's
// summation order: the decode graphs' values, read back by this launch only).
#pragma once

#include "lanes/qwen/kernels/attention_decode.cuh"

namespace lg::qwen::dev {

constexpr int kGqaTileKeys = 32;   // keys per tile: one per lane in the score phase
constexpr int kGqaMaxSplits = 128;  // the grid's y extent at most
constexpr int kGqaMaxGroup = 16;   // query heads per KV head (warps per block) at most

/// What the KV-head decode attention reads and writes.
struct GqaDecodeParams {
  const float* qkv;      // f32 [B, (H+2KV)*DH]: each sequence's raw projection (row row_map[b] with a row map)
  const int* row_map;    // [B]: entry b's row of qkv and out, or null (row b)
  bf16* k_cache;         // bf16 [KV, rows, DH]: this layer's pool (read, and written at each position)
  bf16* v_cache;
  const int* block_table;  // [B, table_stride]
  const int* pos;          // [B]: each sequence's query position
  int table_stride;
  int H, KV, rows, block_shift;
  float scale;             // 1 / sqrt(DH)
  int min_split;           // shortest chunk of positions one block takes
  float* partial;          // f32 [B, H, gridDim.y, DH + 2]
  int* counters;           // [B, KV], zero between launches
  bf16* out;               // bf16 [B, H * DH]
  const float* bias;       // f32 [(H+2KV)*DH] or null
  const float* q_norm;     // f32 [DH] or null
  const float* k_norm;
  const float* inv_freq;   // f32 [DH/2]
  float eps;
};

/// Bytes of dynamic shared memory per block: the G queries (f32) and two stages of K and V tiles.
template <int DH>
constexpr size_t gqa_smem_bytes(int G) {
  return static_cast<size_t>(G) * DH * 4 + 2 * 2 * static_cast<size_t>(kGqaTileKeys) * (DH + 8) * 2;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/// Keys kb .. kb + KEYS - 1 of a chunk that ends at k1 (a key at or past k1 loads the chunk's last
/// row, which the caller masks), K and V from KV head pools kc / vc (rows through the block table
/// bt) into shared tiles sk / sv [KEYS][DH + 8], by the block's `nthreads` threads, as one
/// cp.async group. v6 and v9 (attention_decode_gqa_tc.cuh) load their tiles with it.
template <int DH, int KEYS>
__device__ __forceinline__ void gqa_load_tile(const int* bt, int block_shift, const bf16* kc, const bf16* vc, int kb,
                                              int k1, bf16* sk, bf16* sv, int nthreads) {
  constexpr int kChunks = DH / 8, RS = DH + 8;  // 16-byte pieces of a row; a tile row's stride
  for (int c = threadIdx.x; c < KEYS * kChunks; c += nthreads) {
    const int j = c / kChunks, part = c % kChunks;
    const int row = paged_row(bt, min(kb + j, k1 - 1), block_shift);
    const size_t off = static_cast<size_t>(row) * DH + part * 8;
    cp_async16(sk + j * RS + part * 8, kc + off);
    cp_async16(sv + j * RS + part * 8, vc + off);
  }
  cp_async_commit();
}

/// What block (split, entry b) of a by-KV-head launch reads after its PDL wait: the entry's
/// position, its row of the projection and the output (row_map), and its chunk [k0, k1) of the
/// positions; `empty` when the launch has more splits than the sequence's length needs.
template <int DH>
struct GqaChunk {
  int pos, qrow;
  const float* qkv;  ///< the entry's raw projection row
  DecodeSplits sp;
  int k1, k0;
  __device__ __forceinline__ GqaChunk(const GqaDecodeParams& p, int b, int split)
      : pos(p.pos[b]),
        qrow(p.row_map ? p.row_map[b] : b),
        qkv(p.qkv + static_cast<size_t>(qrow) * (p.H + 2 * p.KV) * DH),
        sp(pos + 1, p.min_split, static_cast<int>(gridDim.y)),
        k1(sp.len - split * sp.chunk),
        k0(max(0, k1 - sp.chunk)) {}
  __device__ __forceinline__ bool empty(int split) const { return split >= sp.n; }
};

/// Split 0's warp: the key and value of KV head kvh at the entry's position, from its raw
/// projection (bias, k-norm and RoPE with the lane's (cos, sin), as rope_kv_kernel), written to
/// the caches as bf16.
template <int DH>
__device__ __forceinline__ void gqa_write_pos_kv(const GqaDecodeParams& p, const GqaChunk<DH>& ch, const int* bt,
                                                 int kvh, const RopeConstants<DH>& c,
                                                 const float (&cs)[DecodeSlice<DH>::EPL],
                                                 const float (&sn)[DecodeSlice<DH>::EPL]) {
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const int lane = threadIdx.x & 31;
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  float kp[EPL], vp[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    kp[e] = active ? __ldcg(ch.qkv + static_cast<size_t>(p.H + kvh) * DH + lane * EPL + e) : 0.f;
    vp[e] = active ? __ldcg(ch.qkv + static_cast<size_t>(p.H + p.KV + kvh) * DH + lane * EPL + e) : 0.f;
  }
  rope_head_slice<DH>(kp, c.bk, c.kn, p.k_norm != nullptr, cs, sn, p.eps);
  const size_t row = pool_offset<DH>(kvh, p.rows, paged_row(bt, ch.pos, p.block_shift));
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    if (active) {
      p.k_cache[row + lane * EPL + e] = __float2bfloat16(kp[e]);
      p.v_cache[row + lane * EPL + e] = __float2bfloat16(vp[e] + c.bv[e]);
    }
}

/// The lane's DecodeSlice of a bf16 row in shared memory, packed as load_bf16_raw packs it (0 in
/// an inactive lane): one 8-, 4- or 2-byte load.
template <int DH>
__device__ __forceinline__ uint2 smem_bf16_slice(const bf16* row) {
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const int lane = threadIdx.x & 31;
  if (lane >= DecodeSlice<DH>::kActiveLanes) return make_uint2(0u, 0u);
  if constexpr (EPL == 4) return *reinterpret_cast<const uint2*>(row + 4 * lane);
  else if constexpr (EPL == 2) return make_uint2(*reinterpret_cast<const unsigned*>(row + 2 * lane), 0u);
  else return make_uint2(*reinterpret_cast<const unsigned short*>(row + lane), 0u);
}

/// Grid (KV, splits <= kGqaMaxSplits, B), G = H / KV warps per block, gqa_smem_bytes<DH>(G) of
/// dynamic shared memory.
template <int DH>
__global__ void __launch_bounds__(kGqaMaxGroup * 32) attn_decode_gqa_kernel(const GqaDecodeParams p) {
  constexpr int EPL = DecodeSlice<DH>::EPL, RS = DH + 8;  // RS: a tile row's stride in bf16
  constexpr int kChunks = DH / 8;                          // 16-byte pieces of a row
  extern __shared__ __align__(16) unsigned char smem[];
  float* s_q = reinterpret_cast<float*>(smem);  // [G][DH]
  const int G = p.H / p.KV;
  bf16* s_k = reinterpret_cast<bf16*>(s_q + G * DH);  // [2][32][RS]
  bf16* s_v = s_k + 2 * kGqaTileKeys * RS;
  __shared__ bool s_last;

  const int kvh = blockIdx.x, split = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nthreads = G * 32;
  const int h = kvh * G + warp;
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  const int* bt = p.block_table + static_cast<size_t>(b) * p.table_stride;
  const bf16* kc = p.k_cache + pool_offset<DH>(kvh, p.rows, 0);
  const bf16* vc = p.v_cache + pool_offset<DH>(kvh, p.rows, 0);

  // Weights first (no kernel writes them), then the wait on the projection's GEMM.
  RopeConstants<DH> c;
  c.load(p.bias, p.q_norm, p.k_norm, p.inv_freq, p.H, p.KV, h, kvh);
  grid_dependency_wait();
  launch_dependents();
  const GqaChunk<DH> ch(p, b, split);
  if (ch.empty(split)) return;  // past the end: not counted, not merged
  const int pos = ch.pos, qrow = ch.qrow, k0 = ch.k0, k1 = ch.k1;
  const float* qkv = ch.qkv;
  const DecodeSplits& sp = ch.sp;

  // The tile loads: key k0 + 32 t + j of the chunk (past k1: the chunk's last row, masked later).
  auto load_tile = [&](int t, int stage) {
    gqa_load_tile<DH, kGqaTileKeys>(bt, p.block_shift, kc, vc, k0 + t * kGqaTileKeys, k1,
                                    s_k + stage * kGqaTileKeys * RS, s_v + stage * kGqaTileKeys * RS, nthreads);
  };
  const int ntiles = (k1 - k0 + kGqaTileKeys - 1) / kGqaTileKeys;
  const bool holds_pos = split == 0;
  // Split 0 writes this position's K/V first (its last tile reads them back), so its first tile
  // is issued after the write; the other splits' first tiles go out at once.
  if (!holds_pos) load_tile(0, 0);

  // The query of head h (and, split 0, the key and value at pos), RoPE at pos.
  float q[EPL];
  float cs[EPL], sn[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    q[e] = active ? __ldcg(qkv + static_cast<size_t>(h) * DH + lane * EPL + e) : 0.f;
    sincosf(static_cast<float>(pos) * c.fr[e], &sn[e], &cs[e]);
  }
  rope_head_slice<DH>(q, c.bq, c.qn, p.q_norm != nullptr, cs, sn, p.eps);
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    if (active) s_q[warp * DH + lane * EPL + e] = q[e];
  if (holds_pos) {
    if (warp == 0) gqa_write_pos_kv<DH>(p, ch, bt, kvh, c, cs, sn);
    __syncthreads();  // the block's writes are visible to its own cp.async reads (L2) after this
    load_tile(0, 0);
  }

  float m = kNegInf, l = 0.f, acc[EPL] = {};
  for (int t = 0; t < ntiles; ++t) {
    if (t + 1 < ntiles) {
      load_tile(t + 1, (t + 1) & 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // tile t is in shared memory for every thread (and s_q, on the first pass)
    const bf16* K = s_k + (t & 1) * kGqaTileKeys * RS;
    const bf16* V = s_v + (t & 1) * kGqaTileKeys * RS;
    const int key = k0 + t * kGqaTileKeys + lane;
    float s = 0.f;
    {
      const uint4* kr = reinterpret_cast<const uint4*>(K + lane * RS);
      const float4* qv = reinterpret_cast<const float4*>(s_q + warp * DH);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const uint4 u = kr[c];
        const float4 qa = qv[2 * c], qb = qv[2 * c + 1];
        s = fmaf(qa.x, lg_bf16_lo(u.x), s);
        s = fmaf(qa.y, lg_bf16_hi(u.x), s);
        s = fmaf(qa.z, lg_bf16_lo(u.y), s);
        s = fmaf(qa.w, lg_bf16_hi(u.y), s);
        s = fmaf(qb.x, lg_bf16_lo(u.z), s);
        s = fmaf(qb.y, lg_bf16_hi(u.z), s);
        s = fmaf(qb.z, lg_bf16_lo(u.w), s);
        s = fmaf(qb.w, lg_bf16_hi(u.w), s);
      }
    }
    s = key < k1 ? s * p.scale : kNegInf;
    const float m_new = fmaxf(m, lg_warp_max(s));  // finite: key k0 + 32 t < k1
    const float corr = __expf(m - m_new);           // m = -inf first: exp(-inf) = 0
    const float pr = __expf(s - m_new);             // a masked key: 0
    l = l * corr + lg_warp_sum(pr);
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[e] *= corr;
#pragma unroll 8
    for (int j = 0; j < kGqaTileKeys; ++j) {
      const float pj = __shfl_sync(0xffffffffu, pr, j);
      const uint2 vr = smem_bf16_slice<DH>(V + j * RS);
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[e] = fmaf(pj, raw_elem(vr, e), acc[e]);
    }
    m = m_new;
    __syncthreads();  // every thread is done with this stage before the next iteration refills it
  }

  bf16* out = p.out + (static_cast<size_t>(qrow) * p.H + h) * DH;
  if (sp.n == 1) {
#pragma unroll
    for (int e = 0; e < EPL; ++e)
      if (active) out[lane * EPL + e] = __float2bfloat16(acc[e] / l);  // key k0 is in the chunk: l > 0
    return;
  }
  const int splits = static_cast<int>(gridDim.y);
  float* mine = p.partial + ((static_cast<size_t>(b) * p.H + h) * splits + split) * (DH + 2);
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    if (active) mine[lane * EPL + e] = acc[e];
  if (lane == 0) {
    mine[DH] = m;
    mine[DH + 1] = l;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = arrive_last(p.counters + static_cast<size_t>(b) * p.KV + kvh, 1, sp.n);
  __syncthreads();
  if (!s_last) return;

  // The last block of (b, kvh): warp g merges head kvh * G + g over the splits. The global max
  // first, the lanes reading the splits' maxima in parallel; then each split's weight is known
  // and every lane sums its output elements over the splits with loads that do not wait on one
  // another (unrolled), so the merge costs a few round trips to L2, not one per split or batch.
  const float* pp = p.partial + (static_cast<size_t>(b) * p.H + h) * splits * (DH + 2);
  float gm = kNegInf;
  for (int s0 = lane; s0 < sp.n; s0 += 32) gm = fmaxf(gm, __ldcg(pp + s0 * (DH + 2) + DH));
  gm = lg_warp_max(gm);  // finite: every split below sp.n has keys
  float gl = 0.f, go[EPL] = {};
#pragma unroll 8
  for (int s0 = 0; s0 < sp.n; ++s0) {
    const float* ps = pp + s0 * (DH + 2);
    const float c = __expf(__ldcg(ps + DH) - gm);
    gl = fmaf(__ldcg(ps + DH + 1), c, gl);
#pragma unroll
    for (int e = 0; e < EPL; ++e) go[e] = fmaf(active ? __ldcg(ps + lane * EPL + e) : 0.f, c, go[e]);
  }
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    if (active) out[lane * EPL + e] = __float2bfloat16(go[e] / gl);
}

}  // namespace lg::qwen::dev
