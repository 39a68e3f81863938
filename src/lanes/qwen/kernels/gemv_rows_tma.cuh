// The tensor-core GEMV of a few rows fed by the Tensor Memory Accelerator (launch_gemv_rows' kTma
// form): y[t, n] = sum_k x[t, k] W[n, k] for T <= 32 rows, W bf16 [N, K], x bf16 [T, K], fp32
// accumulation. Same contract as gemv_rows.cuh (the register-fed form); what differs is how the
// bytes arrive. The register form streams W at 1.8-2.2 TB/s and two shared-memory labs with
// cp.async by every thread reached 2.8-3.1 at T = 16 (bench/RESULTS.md, sixth and seventh
// sessions), where cuBLASLt reaches ~4.0 on the large projections but cannot take a PDL launch.
// Here one producer thread moves each stage as four TMA boxes (two of W, two of x), so a block
// keeps S x 16 KB of W in flight with five warps (nine with 8 consumers), and the first stages'
// W boxes are issued before the PDL wait (weights never depend on the previous kernel).
//
// Work items: (64-row tile of W, K split); a persistent grid walks items blockIdx.x, + gridDim.x,
// ...; the producer's ring of stages runs on across items. A stage holds kTmaK = 128 k as two
// boxes of 64 k (128 bytes a row, the 128-byte swizzle's span) of the tile's 64 W rows and of the
// 8 NT x rows. Outside the tensors the boxes hold zeros: rows past T or N, and k past K (so a
// chunk's last 16-k step may be half real, half zeros: its products add nothing).
// Consumer warp w owns MMA tile w (W rows 16 w .. 16 w + 15 of the item's tile) for every k (or,
// with 8 consumer warps, warps w and w + 4 own it for a stage's first and second box):
//   A (16 x 16) = W rows, MMA row i < 8 being weight row 2 i and row 8 + i weight row 2 i + 1, so
//     a thread's C fragment holds both rows of a SwiGLU pair (gate/up rows are interleaved at
//     upload) and two adjacent outputs for the residual forms, as in gemv_rows.cuh. (Rows 2 i sit
//     in 4 of the 8 swizzle phases: the ldmatrix of A takes two bank passes. Counted, not
//     measured: a warp's 16 ldmatrix and 16 MMAs a stage take a few hundred cycles, where a
//     stage's 16 KB take ~1,000 cycles to arrive at an SM's share of the copy rate);
//   B (16 x 8 per n-tile) = x rows as the .col operand: ldmatrix of x[t][k..k+7] is exactly b0/b1.
// Epilogues as gemv_rows.cuh: store, residual (+=, K splits summed in split order), SwiGLU (one split).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/gemv_rows.cuh"
#include "lanes/qwen/kernels/pdl.cuh"
#include "lanes/qwen/kernels/tma.cuh"

namespace lg::qwen::dev {

constexpr int kTmaRows = 64;                          ///< W rows of a work item's tile
constexpr int kTmaK = 128;                            ///< k of a stage: two boxes of kTmaBoxK
constexpr int kTmaBoxK = 64;                          ///< k of a box: 128 bytes, the swizzle's span
constexpr int kTmaTiles = kTmaRows / 16;  ///< MMA tiles of 16 rows in a work item's tile
/// Threads of a block of CW consumer warps (4: one an MMA tile; 8: two, each half of a stage's
/// k) and one producer warp.
__host__ __device__ constexpr int tma_threads(int CW) { return (CW + 1) * 32; }

/// Bytes of one box of W (64 rows x 64 k) and of x (8 NT rows x 64 k); a stage holds two of each.
__host__ __device__ constexpr int tma_w_box_bytes() { return kTmaRows * kTmaBoxK * 2; }
__host__ __device__ constexpr int tma_x_box_bytes(int NT) { return 8 * NT * kTmaBoxK * 2; }
__host__ __device__ constexpr int tma_stage_bytes(int NT) { return 2 * (tma_w_box_bytes() + tma_x_box_bytes(NT)); }
/// Bytes where the second k-half's warps hand their sums to the first's (CW = 8): a float of
/// each of the 4 NT accumulators of each lane of 4 warps.
__host__ __device__ constexpr int tma_pair_bytes(int NT, int CW) { return CW == 8 ? kTmaTiles * NT * 4 * 32 * 4 : 0; }
/// Dynamic shared memory of a launch: 1,024 bytes of alignment slack, the stages, 2 S mbarriers,
/// the k-halves' hand-off.
__host__ __device__ constexpr int tma_smem_bytes(int NT, int S, int CW) {
  return 1024 + S * tma_stage_bytes(NT) + 2 * S * 8 + tma_pair_bytes(NT, CW);
}

/// Named barrier `id` (1..15; 0 is __syncthreads') of `threads` threads.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// What one kTma launch computes (built by launch_gemv_rows; the tensor maps travel beside it).
struct GemvTmaParams {
  float* out_f32 = nullptr;  ///< [T, N] (kStore, kResidual)
  bf16* out_bf16 = nullptr;  ///< [T, N / 2] (kSwiGLU)
  float4* clear = nullptr;   ///< zero-filled after the wait, clear_n4 float4s
  long long clear_n4 = 0;
  int N = 0, K = 0, T = 0;
  int tiles = 0;    ///< ceil(N / 64)
  int splits = 1;   ///< K splits; item i is split i / tiles of tile i % tiles
  float* partials = nullptr;  ///< [splits, T, N]: kResidual with splits > 1, kSlices (GemvRowsArgs::partials)
  int* arrivals = nullptr;    ///< [N / 16], zero between launches
  int split_k = 0;  ///< k of a split, a multiple of kTmaK (the last may be shorter)
};

/// A work item's extent.
struct TmaItem {
  int n0, rows;  ///< first W row, W rows (<= 64, a multiple of 16)
  int k0, klen;  ///< first k, k count
  __device__ TmaItem(const GemvTmaParams& p, int i) {
    n0 = (i % p.tiles) * kTmaRows;
    rows = min(kTmaRows, p.N - n0);
    k0 = (i / p.tiles) * p.split_k;
    klen = min(p.split_k, p.K - k0);
  }
  __device__ int chunks() const { return (klen + kTmaK - 1) / kTmaK; }
  __device__ int chunk_k(int c) const { return min(kTmaK, klen - c * kTmaK); }
  /// Boxes of chunk c (a chunk's second box is issued only if it holds k of the item).
  __device__ int boxes(int c) const { return chunk_k(c) > kTmaBoxK ? 2 : 1; }
};

/// NT n-tiles of 8 x rows: 1 for T <= 8, 2 for T <= 16, 4 for T <= 32; S stages; CW consumer
/// warps (4: warp w runs MMA tile w over all of a stage's k; 8: warps w and w + 4 run tile w % 4
/// over the stage's first and second box, and at the end of an item warp w + 4 hands its sums to
/// warp w through shared memory, which adds them after its own: a fixed order). Block
/// tma_threads(CW), dynamic shared memory tma_smem_bytes(NT, S, CW). wmap: W [N, K] in boxes of
/// 64 x 64; xmap: x [T, K] in boxes of 8 NT x 64.
template <int NT, GemvRowsOutput OUT, int S, int CW>
__global__ void __launch_bounds__(tma_threads(CW), 1)
    gemv_rows_tma_kernel(const GemvTmaParams p, const __grid_constant__ CUtensorMap wmap,
                         const __grid_constant__ CUtensorMap xmap) {
  extern __shared__ __align__(1024) char tma_smem_raw[];
  constexpr int kStage = tma_stage_bytes(NT), kW = tma_w_box_bytes(), kX = tma_x_box_bytes(NT);
  // The swizzled boxes need 1,024-byte aligned bases; the dynamic window's own is not promised.
  char* const smem = tma_smem_raw + ((1024 - (smem_addr(tma_smem_raw) & 1023)) & 1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * kStage);
  uint64_t* empty = full + S;
  [[maybe_unused]] float* pair = reinterpret_cast<float*>(empty + S);  // tma_pair_bytes(NT, CW)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int items = p.tiles * p.splits;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CW);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp == CW) {
    // The producer (one thread). Before the PDL wait: the W boxes of the ring's first stages
    // (their full barriers expect the x boxes too, loaded after the wait).
    const bool leader = lane == 0;
    const uint64_t w_policy = l2_evict_first(), x_policy = l2_evict_last();
    auto w_boxes = [&](const TmaItem& it, int c, int s) {
      for (int b = 0; b < it.boxes(c); ++b)
        tma_load_2d(smem + s * kStage + b * kW, &wmap, it.k0 + c * kTmaK + b * kTmaBoxK, it.n0, &full[s], w_policy);
    };
    auto x_boxes = [&](const TmaItem& it, int c, int s) {
      for (int b = 0; b < it.boxes(c); ++b)
        tma_load_2d(smem + s * kStage + 2 * kW + b * kX, &xmap, it.k0 + c * kTmaK + b * kTmaBoxK, 0, &full[s],
                    x_policy);
    };
    int issued = 0, item = static_cast<int>(blockIdx.x), c = 0;
    for (; issued < S && item < items; ++issued) {
      const TmaItem it(p, item);
      if (leader) {
        mbar_arrive_expect_tx(&full[issued], it.boxes(c) * (kW + kX));
        w_boxes(it, c, issued);
      }
      if (++c == it.chunks()) c = 0, item += static_cast<int>(gridDim.x);
    }
    grid_dependency_wait();
    launch_dependents();
    if (!leader) return;
    for (int j = 0, item2 = static_cast<int>(blockIdx.x), c2 = 0; j < issued; ++j) {
      const TmaItem it(p, item2);
      x_boxes(it, c2, j);
      if (++c2 == it.chunks()) c2 = 0, item2 += static_cast<int>(gridDim.x);
    }
    for (; item < items; ++issued) {
      const TmaItem it(p, item);
      const int s = issued % S;
      mbar_wait(&empty[s], ((issued / S) - 1) & 1);
      mbar_arrive_expect_tx(&full[s], it.boxes(c) * (kW + kX));
      w_boxes(it, c, s);
      x_boxes(it, c, s);
      if (++c == it.chunks()) c = 0, item += static_cast<int>(gridDim.x);
    }
    return;
  }

  // Consumers.
  grid_dependency_wait();
  launch_dependents();
  if (p.clear) {
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long i = static_cast<long long>(blockIdx.x) * (CW * 32) + threadIdx.x; i < p.clear_n4;
         i += static_cast<long long>(gridDim.x) * (CW * 32))
      p.clear[i] = z;
  }
  const int g = lane >> 2, q = lane & 3;
  const int m = warp % kTmaTiles, kh = warp / kTmaTiles;  // MMA tile; k-half (CW = 8) or 0
  constexpr int kSteps = CW == 8 ? kTmaK / 32 : kTmaK / 16;  // 16-k steps of a stage this warp runs
  // This lane's ldmatrix rows: A's weight row 16 m + 2 (lane % 8) + (lane / 8) % 2 at 16-byte
  // chunk lane / 16 of each 16-k step; B's x row (lane / 16) * 8 + lane % 8 (lane % 8 at NT = 1)
  // at chunk (lane / 8) % 2. The swizzle puts chunk c of row r at c ^ (r % 8).
  const int a_row = 16 * m + 2 * (lane & 7) + ((lane >> 3) & 1), a_half = lane >> 4;
  const int b_row = NT >= 2 ? (lane >> 4) * 8 + (lane & 7) : (lane & 7), b_half = (lane >> 3) & 1;
  auto chunk_at = [](int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); };
  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  int used = 0;
  for (int item = static_cast<int>(blockIdx.x); item < items; item += static_cast<int>(gridDim.x)) {
    const TmaItem it(p, item);
    const bool active = 16 * m < it.rows;  // warp-uniform: N is a multiple of 16
    const int nch = it.chunks();
    for (int c = 0; c < nch; ++c, ++used) {
      const int s = used % S;
      mbar_wait(&full[s], (used / S) & 1);
      if (active) {
        const char* st = smem + s * kStage;
        const int steps = (it.chunk_k(c) + 15) / 16;
#pragma unroll
        for (int jj = 0; jj < kSteps; ++jj) {
          const int j = kh * kSteps + jj;
          if (j < steps) {
            const char* wb = st + (j / 4) * kW;           // the step's W box
            const char* xb = st + 2 * kW + (j / 4) * kX;  // and x box
            const int c0 = (j % 4) * 2;                   // its first 16-byte chunk in them
            unsigned a[4];
            ldmatrix_x4(a, wb + chunk_at(a_row, c0 + a_half));
            unsigned b[NT][2];
            if constexpr (NT >= 2) {
#pragma unroll
              for (int pr = 0; pr < NT / 2; ++pr) {  // n-tiles 2 pr and 2 pr + 1: x rows 16 pr ..
                unsigned r[4];
                ldmatrix_x4(r, xb + chunk_at(16 * pr + b_row, c0 + b_half));
                b[2 * pr][0] = r[0], b[2 * pr][1] = r[1], b[2 * pr + 1][0] = r[2], b[2 * pr + 1][1] = r[3];
              }
            } else {
              ldmatrix_x2(b[0], xb + chunk_at(b_row, c0 + b_half));
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_16816(acc[nt], a[0], a[1], a[2], a[3], b[nt][0], b[nt][1]);
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (!active) continue;
    if constexpr (CW == 8) {  // the second k-half's sums to the first's warp, then added after its own
      float* mine = pair + m * (NT * 4 * 32) + lane;
      if (kh == 1) {
#pragma unroll
        for (int i = 0; i < NT * 4; ++i) mine[i * 32] = acc[i / 4][i % 4], acc[i / 4][i % 4] = 0.f;
      }
      named_barrier_sync(1 + m, 64);
      if (kh == 0) {
#pragma unroll
        for (int i = 0; i < NT * 4; ++i) acc[i / 4][i % 4] += mine[i * 32];
      }
      named_barrier_sync(1 + kTmaTiles + m, 64);  // read before the next item's hand-off writes
      if (kh == 1) continue;
    }
    rows_epilogue<NT, OUT>(acc, it.n0 + 16 * m + 2 * g, q, p.T, p.N, p.splits, p.out_f32, p.out_bf16,
                           SplitSum{p.partials, p.arrivals, item / p.tiles});
  }
}

}  // namespace lg::qwen::dev
