// Causal GQA prefill attention on the tensor cores (FlashAttention-2: Dao 2023, arXiv:2307.08691),
// as a device template that both the hand-written lane (nvcc) and the compiled lane (NVRTC, which
// pastes this text into its emitted source) instantiate. Hence: no include directives, nothing from
// the standard library, no CUDA bf16 header types (bf16 travels as unsigned short / packed unsigned
// int bit patterns), every name in namespace lg_fa. C++17.
//
// Algorithm. One block of 4 warps per (query tile of 64 rows, query head); warp w owns query rows
// 16w..16w+15 of the tile. The Q tile is staged once through shared memory into registers (mma A
// fragments). Keys/values stream through shared memory in tiles of 64 positions; for each key tile
// a warp computes S = Q K^T (16 x 64, fp32 accumulators), masks the positions its rows may not see,
// updates the running max m and partial sum l of each row (online softmax, Milakov & Gimelshein
// 2018), rounds P = exp(S - m) to bf16 in registers (the S accumulator layout is exactly the A
// operand layout of the next mma, so P never touches shared memory) and accumulates O += P V in
// fp32. At the end O / l goes to the caller's store. Query t sees keys 0 .. pos(t) inclusive (the
// KV cache already holds earlier prefill chunks), so a block runs over keys 0 .. max pos of its
// rows; key tiles past a warp's last visible key are skipped by that warp, and only tiles that
// straddle a warp's first position are masked element by element.
//
// Why these tiles. 64 x 64 with 4 warps is FlashAttention-2's shape for mma.sync: 16 query rows per
// warp is the mma M, so no warp needs to talk to another about a row. K and V tiles of 64 x (DH + 8)
// bf16 fit static shared memory (34 KB at DH = 128, under the 48 KB that needs no opt-in, which
// the compiled lane's launcher does not do), so several blocks share an SM. Rows are padded by 8
// elements (16 bytes): ldmatrix reads 8 rows at one column, and with the pad those 8 rows start in
// 8 different 16-byte bank groups. Loads go global -> registers -> shared (the Policy may convert
// on the fly, so cp.async cannot be used): V of tile i is loaded while S of tile i is computed, K
// of tile i+1 while P V of tile i is. Blocks are numbered so that the heaviest query tiles (the
// last ones: most keys) start first, and the heads that share a KV head are adjacent (L2 reuse).
//
// Fragment layouts relied on (PTX ISA, "Matrix fragments for mma.m16n8k16" with .bf16): lane =
// 4 g + c (g = lane / 4 in 0..7, c = lane % 4).
//   A (16 x 16, row-major), 4 x b32, two bf16 each (lower column in the low half):
//     a0 = (row g, cols 2c, 2c+1)  a1 = (row g+8, cols 2c, 2c+1)
//     a2 = (row g, cols 2c+8, +9)  a3 = (row g+8, cols 2c+8, +9)
//   B (16 x 8, "col": K x N), 2 x b32: b0 = (rows 2c, 2c+1; col g)  b1 = (rows 2c+8, 2c+9; col g)
//   C/D (16 x 8 fp32): d0, d1 = (row g, cols 2c, 2c+1)  d2, d3 = (row g+8, cols 2c, 2c+1)
//   ldmatrix .m8n8 .b16: lanes 8i..8i+7 give the row addresses of matrix i; lane l receives, of
//   matrix i, (row l / 4, cols 2(l % 4), +1) in register i; with .trans, (rows 2(l % 4), +1; col l / 4).
// So: Q (row-major [row][dim]) -> A by ldmatrix; K (row-major [key][dim]) is already K^T in "col"
// layout -> B by ldmatrix; V (row-major [key][dim]) -> B by ldmatrix.trans; the C fragments of S
// for key columns 16k..16k+15 (two n-tiles) are, packed pairwise to bf16, the A fragment of P for
// k-step k.
//
// The Policy (supplied by the caller, passed by const reference; all members __device__):
//   uint4 load_q8(int t, int h, int d0) const      8 bf16 bit patterns of q[t, h, d0 .. d0+7], element
//                                                 d0+i in bits 16(i%2) of word i/2 (little-endian
//                                                 memory order of a bf16 row); d0 % 8 == 0; t < T.
//   uint4 load_k8(int kvh, int j, int d0) const    likewise k of KV head kvh at cache position j.
//   uint4 load_v8(int kvh, int j, int d0) const    likewise v. Only called for j <= max pos(t).
//   int pos(int t) const                           absolute position of query t (pos0 + t): it sees
//                                                 keys 0 .. pos(t). pos(t) >= 0; t < T.
//   void store_o2(int t, int h, int d, float o0, float o1) const
//                                                 out[t, h, d] = o0, out[t, h, d+1] = o1 (d even);
//                                                 called exactly once per (t < T, h, even d).
// The template rounds nothing itself on the way in: whatever the policy returns is the bf16
// operand (the hand-written lane rounds its fp32 q to nearest even there).
//
// A kernel that uses it (grid lg_fa::grid_blocks(T, H) blocks of lg_fa::kThreads threads, no
// dynamic shared memory; pos(t) should grow with t, which only the heavy-first order relies on):
//   extern "C" __global__ void __launch_bounds__(lg_fa::kThreads) attn(..., int T, int H, int group, float scale) {
//     __shared__ lg_fa::Smem<128> sm;
//     const MyPolicy p{...};
//     int tile, h;
//     lg_fa::schedule(blockIdx.x, T, H, tile, h);
//     lg_fa::attention_block<128>(p, tile, h, T, group, scale, sm);
//   }
// Measured (H200, bench/flash_attention.md): 0.187 ms at T = 2048, H 32, KV 8, DH 128 (184 TFLOP/s
// causal), 26x the CUDA-core kernel it replaces.
#pragma once

namespace lg_fa {

constexpr int kBlockM = 64;   ///< query rows per block
constexpr int kBlockN = 64;   ///< key positions per shared-memory tile
constexpr int kWarps = 4;     ///< warps per block, 16 query rows each
constexpr int kThreads = kWarps * 32;

/// Blocks of one launch: ceil(T / 64) query tiles times H query heads (1-D grid of kThreads).
__host__ __device__ constexpr int grid_blocks(int T, int H) { return (T + kBlockM - 1) / kBlockM * H; }

/// Block b of the 1-D grid -> (query tile, query head), heaviest (last) query tiles first.
__device__ __forceinline__ void schedule(int b, int T, int H, int& tile, int& h) {
  const int n_tiles = (T + kBlockM - 1) / kBlockM;
  tile = n_tiles - 1 - b / H;
  h = b % H;
}

/// Two fp32 values -> two bf16 (round to nearest even) in one b32, `lo` in the low half.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// The 8 fp32 values at p (16-byte aligned) as 8 bf16 bit patterns in memory order, rounded to
/// nearest even: a policy's load from an fp32 q or KV cache.
__device__ __forceinline__ uint4 load8_f32_as_bf16(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  uint4 r;
  r.x = pack_bf16x2(a.x, a.y);
  r.y = pack_bf16x2(a.z, a.w);
  r.z = pack_bf16x2(b.x, b.y);
  r.w = pack_bf16x2(b.z, b.w);
  return r;
}

/// 2^x (ex2.approx: relative error 2^-22; -inf -> +0).
__device__ __forceinline__ float exp2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                                  unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

/// d += a (16x16 bf16, row) * b (16x8 bf16, col), fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint4 zero_uint4() {
  uint4 z;
  z.x = z.y = z.z = z.w = 0u;
  return z;
}

/// Shared memory of one block: a K and a V tile, rows padded by 8 bf16 (see the top comment).
/// 16-byte aligned: rows are written as uint4 and read by ldmatrix.
template <int DH> struct alignas(16) Smem {
  static constexpr int kStride = DH + 8;
  unsigned short k[kBlockN * kStride];
  unsigned short v[kBlockN * kStride];
};

/// Causal attention of query tile `tile` (rows 64 tile .. min(64 tile + 63, T - 1)) of query head
/// h, which reads KV head h / group. Must be called by all kThreads threads of a block with the
/// same arguments, from a kernel launched with blockDim.x == kThreads. scale multiplies q.k
/// (1/sqrt(DH) for Qwen: "Attention Is All You Need" scaling). DH in {16, 32, 64, 128}. `sm` is
/// shared memory of the block (e.g. a __shared__ Smem<DH> of the calling kernel).
/// window > 0: a sliding window, query t sees keys pos(t) - window + 1 .. pos(t) (transformers'
/// `kv_idx > q_idx - sliding_window`); the block starts at the first key tile some row of it sees,
/// and keys before the block's first visible one are neither read (the policy is not asked for
/// them) nor computed. softcap > 0: scores become softcap * tanh(scale q.k / softcap) (Gemma 2's
/// logit soft-capping). Both are constants at every call site (the function is inlined), and
/// every use of them is behind `window > 0` / `softcap > 0.f`, so a caller that passes neither
/// compiles to the plain causal kernel (the hand-written lane's four cubins are byte-identical to
/// those from before windows; keep them so).
template <int DH, class Policy>
__device__ __forceinline__ void attention_block(const Policy& p, int tile, int h, int T, int group, float scale,
                                                Smem<DH>& sm, int window = 0, float softcap = 0.f) {
  static_assert(DH == 16 || DH == 32 || DH == 64 || DH == 128, "lg_fa: head_dim must be 16, 32, 64 or 128");
  constexpr int kStride = Smem<DH>::kStride;
  constexpr int kChunksPerRow = DH / 8;                        // uint4 chunks in one row
  constexpr int kLoads = kBlockN * kChunksPerRow / kThreads;   // uint4 per thread per tile (DH / 16)
  constexpr int kDimSteps = DH / 16;                           // mma k-steps over the head dim
  constexpr int kDimTiles = DH / 8;                            // mma n-tiles of O
  constexpr int kKeyTiles = kBlockN / 8;                       // mma n-tiles of S
  static_assert(kLoads >= 1 && kLoads * kThreads == kBlockN * kChunksPerRow, "lg_fa: tile load split");

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
  const int q0 = tile * kBlockM;
  const int kvh = h / group;
  const float scale_log2 = scale * 1.4426950408889634f;  // exp(x) = 2^(x log2 e)
  // Soft-capped: log2(e) C tanh(s scale / C).
  const float cap_log2 = softcap * 1.4426950408889634f, scale_cap = softcap > 0.f ? scale / softcap : 0.f;
  const float neg_inf = __int_as_float(0xff800000);

  // Positions of this thread's two rows (g and g+8 of the warp's 16); rows past T take the last
  // row's position (they are computed but never stored).
  const int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
  const int pos0 = p.pos(row0 < T ? row0 : T - 1), pos1 = p.pos(row1 < T ? row1 : T - 1);
  int wmax = pos0 > pos1 ? pos0 : pos1, wmin = pos0 < pos1 ? pos0 : pos1;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int a = __shfl_xor_sync(0xffffffffu, wmax, o), b = __shfl_xor_sync(0xffffffffu, wmin, o);
    wmax = a > wmax ? a : wmax;
    wmin = b < wmin ? b : wmin;
  }
  const bool warp_live = q0 + warp * 16 < T;  // a warp wholly past T (last tile) has nothing to do
  __shared__ int s_wmax[kWarps], s_wmin[kWarps];
  if (lane == 0) {
    s_wmax[warp] = wmax;
    if (window > 0) s_wmin[warp] = wmin;  // (window is a constant: no store without one)
  }

  // Q tile -> shared (through the K buffer) -> A fragments in registers.
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int ch = tid + i * kThreads, r = ch / kChunksPerRow, d0 = (ch % kChunksPerRow) * 8;
    const uint4 x = q0 + r < T ? p.load_q8(q0 + r, h, d0) : zero_uint4();
    *reinterpret_cast<uint4*>(&sm.k[r * kStride + d0]) = x;
  }
  __syncthreads();
  int n_keys = 0, bmin = window > 0 ? s_wmin[0] : 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    n_keys = s_wmax[w] + 1 > n_keys ? s_wmax[w] + 1 : n_keys;
    if (window > 0) bmin = s_wmin[w] < bmin ? s_wmin[w] : bmin;
  }
  // The first key any row of the block sees (0 without a window), and of the warp's rows the one
  // whose window starts latest.
  const int k_lo = window > 0 && bmin - window + 1 > 0 ? bmin - window + 1 : 0;
  const int w_lo = wmin - window + 1, w_hi_lo = wmax - window + 1;
  unsigned qa[kDimSteps][4];
  {
    const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < kDimSteps; ++kk)
      ldmatrix_x4(smem_addr(&sm.k[r * kStride + kk * 16 + (lane >> 4) * 8]), qa[kk][0], qa[kk][1], qa[kk][2],
                  qa[kk][3]);
  }
  __syncthreads();

  const int n_ktiles = (n_keys + kBlockN - 1) / kBlockN, kt0 = k_lo / kBlockN;
  uint4 stage[kLoads];
  auto load_k = [&](int j0) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int ch = tid + i * kThreads, r = ch / kChunksPerRow, d0 = (ch % kChunksPerRow) * 8;
      // Zero, not unread memory, outside the visible keys: 0 * NaN would poison P V.
      stage[i] = j0 + r < n_keys && (window <= 0 || j0 + r >= k_lo) ? p.load_k8(kvh, j0 + r, d0) : zero_uint4();
    }
  };
  auto load_v = [&](int j0) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int ch = tid + i * kThreads, r = ch / kChunksPerRow, d0 = (ch % kChunksPerRow) * 8;
      stage[i] = j0 + r < n_keys && (window <= 0 || j0 + r >= k_lo) ? p.load_v8(kvh, j0 + r, d0) : zero_uint4();
    }
  };
  auto store_stage = [&](unsigned short* dst) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int ch = tid + i * kThreads, r = ch / kChunksPerRow, d0 = (ch % kChunksPerRow) * 8;
      *reinterpret_cast<uint4*>(&dst[r * kStride + d0]) = stage[i];
    }
  };

  float o[kDimTiles][4];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m0 = neg_inf, m1 = neg_inf, l0 = 0.f, l1 = 0.f;  // running max (log2 units) and partial sum

  // Per-lane byte offsets of the ldmatrix row addresses inside a K or V tile.
  const unsigned k_base = smem_addr(sm.k), v_base = smem_addr(sm.v);
  // K: matrices (keys 8n.., dims 16kk..), (same keys, dims +8), (keys 8(n+1).., dims 16kk..), (.., +8).
  const unsigned k_lane = static_cast<unsigned>((((lane >> 4) * 8 + (lane & 7)) * kStride + ((lane >> 3) & 1) * 8) * 2);
  // V (trans): matrices (keys 16kk+0..7, dims 8n..), (keys +8..15, dims 8n..), (keys 0..7, dims 8(n+1)..), (..).
  const unsigned v_lane = static_cast<unsigned>((((lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8) * 2);

  load_k(kt0 * kBlockN);
  store_stage(sm.k);
  __syncthreads();

  for (int kt = kt0; kt < n_ktiles; ++kt) {
    const int j0 = kt * kBlockN;
    load_v(j0);  // in flight during S = Q K^T
    // A tile some row of the warp sees: not past its last key, not before its first (window).
    const bool active = warp_live && j0 <= wmax && (window <= 0 || j0 + kBlockN - 1 >= w_lo);
    float s[kKeyTiles][4];
    if (active) {
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int n = 0; n < kKeyTiles; n += 2) {
#pragma unroll
        for (int kk = 0; kk < kDimSteps; ++kk) {
          unsigned b0, b1, b2, b3;
          ldmatrix_x4(k_base + k_lane + static_cast<unsigned>((n * 8 * kStride + kk * 16) * 2), b0, b1, b2, b3);
          mma_bf16_16816(s[n], qa[kk], b0, b1);
          mma_bf16_16816(s[n + 1], qa[kk], b2, b3);
        }
      }
      // Scale to log2 units (soft-capped if asked) and mask keys past each row's position (only
      // where the tile reaches past the warp's first position) and, with a window, keys before
      // each row's first (only where the tile starts before the warp's last window start).
      const bool diagonal = j0 + kBlockN - 1 > wmin;
      const bool trailing = window > 0 && j0 < w_hi_lo;
      float mx0 = neg_inf, mx1 = neg_inf;
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = softcap > 0.f ? cap_log2 * tanhf(s[n][e] * scale_cap) : s[n][e] * scale_log2;
          if (diagonal || trailing) {
            const int j = j0 + n * 8 + 2 * c + (e & 1), pr = e < 2 ? pos0 : pos1;
            if (j > pr || (window > 0 && j <= pr - window)) x = neg_inf;
          }
          s[n][e] = x;
        }
        mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
      }
      // The 4 lanes of a quad hold one row's 64 columns between them.
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      // A row that has seen no key yet keeps max -inf; subtracting 0 then keeps exp2 at 0, not NaN.
      const float ref0 = mn0 == neg_inf ? 0.f : mn0, ref1 = mn1 == neg_inf ? 0.f : mn1;
      const float corr0 = exp2_approx(m0 - ref0), corr1 = exp2_approx(m1 - ref1);
      m0 = mn0;
      m1 = mn1;
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) {
        s[n][0] = exp2_approx(s[n][0] - ref0);
        s[n][1] = exp2_approx(s[n][1] - ref0);
        s[n][2] = exp2_approx(s[n][2] - ref1);
        s[n][3] = exp2_approx(s[n][3] - ref1);
        sum0 += s[n][0] + s[n][1];
        sum1 += s[n][2] + s[n][3];
      }
      l0 = l0 * corr0 + sum0;
      l1 = l1 * corr1 + sum1;
#pragma unroll
      for (int n = 0; n < kDimTiles; ++n) {
        o[n][0] *= corr0;
        o[n][1] *= corr0;
        o[n][2] *= corr1;
        o[n][3] *= corr1;
      }
    }
    store_stage(sm.v);  // V's buffer is free: its last readers passed the barrier that ended the last tile
    __syncthreads();    // V visible; every warp is done with this K tile
    if (kt + 1 < n_ktiles) load_k(j0 + kBlockN);  // in flight during O += P V
    if (active) {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        const unsigned pa[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                                pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < kDimTiles; n += 2) {
          unsigned b0, b1, b2, b3;
          ldmatrix_x4_trans(v_base + v_lane + static_cast<unsigned>((kk * 16 * kStride + n * 8) * 2), b0, b1, b2, b3);
          mma_bf16_16816(o[n], pa, b0, b1);
          mma_bf16_16816(o[n + 1], pa, b2, b3);
        }
      }
    }
    if (kt + 1 < n_ktiles) store_stage(sm.k);  // K's buffer is free since the barrier above
    __syncthreads();                          // next K visible; every warp is done with this V tile
  }

  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  const float inv0 = 1.f / l0, inv1 = 1.f / l1;
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) {
    const int d = n * 8 + 2 * c;
    if (row0 < T) p.store_o2(row0, h, d, o[n][0] * inv0, o[n][1] * inv0);
    if (row1 < T) p.store_o2(row1, h, d, o[n][2] * inv1, o[n][3] * inv1);
  }
}

}  // namespace lg_fa
