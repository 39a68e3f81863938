// The tensor-core GEMV of a few rows fed by bulk copies (launch_gemv_rows' kBulk form):
// y[t, n] = sum_k x[t, k] W[n, k] for T <= 16 rows, W bf16 [N, K], x bf16 [T, K], fp32 accumulation.
// Same contract as gemv_rows.cuh (the register-fed form); what differs is how the bytes arrive.
// The register form streams W at 1.8-2.2 TB/s and two shared-memory labs with cp.async by every
// thread reached 2.8-3.1 at T = 16 (bench/RESULTS.md, sixth and seventh sessions), where cuBLASLt
// reaches ~4.0 on the large projections but cannot take a PDL launch. Here one producer warp
// moves a tile's rows with cp.async.bulk (the copy engine does the addressing; no thread holds a
// load in flight), so a block keeps kBulkStages x 16 KB of W in flight with 5 warps, and the
// first stages are issued before the PDL wait (weights never depend on the previous kernel).
//
// Work items: (64-row tile of W, K split); a persistent grid of one block an SM walks items
// blockIdx.x, + gridDim.x, ...; the producer's ring of stages runs on across items. A stage holds
// kBulkK = 128 k of the tile's 64 W rows and of the T x rows, each row padded to 272 bytes so an
// ldmatrix's eight row addresses fall in distinct banks.
// Consumer warp w owns MMA tile w (W rows 16 w .. 16 w + 15 of the item's tile) for every k:
//   A (16 x 16) = W rows, MMA row i < 8 being weight row 2 i and row 8 + i weight row 2 i + 1, so
//     a thread's C fragment holds both rows of a SwiGLU pair (gate/up rows are interleaved at
//     upload) and two adjacent outputs for the residual forms, as in gemv_rows.cuh. The producer
//     stores weight row r at stage slot (r & 1) * 32 + r / 2, so each 8-address phase of the
//     ldmatrix reads 8 consecutive slots (conflict-free at the 272-byte pitch);
//   B (16 x 8 per n-tile) = x rows as the .col operand: ldmatrix of x[t][k..k+7] is exactly b0/b1.
// A chunk's last 16-k step may hold only 8 valid k (K a multiple of 8): its upper halves are
// zeroed in registers (the stage there holds stale or unwritten bytes).
// Epilogues as gemv_rows.cuh: store, residual (+=, atomic across K splits), SwiGLU (one split).
#pragma once

#include <cuda_bf16.h>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/bulk_copy.cuh"
#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/gemv_rows.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kBulkRows = 64;                     ///< W rows of a work item's tile
constexpr int kBulkK = 128;                       ///< k of a stage
constexpr int kBulkPitch = kBulkK * 2 + 16;       ///< bytes of a stage row (padded)
constexpr int kBulkConsumers = kBulkRows / 16;    ///< warps doing MMAs, one 16-row tile each
constexpr int kBulkThreads = (kBulkConsumers + 1) * 32;  ///< and one producer warp
/// Stages of the ring: 8 (16 KB of W each, one block an SM by its shared memory) or 4 (two).
constexpr int kBulkStages = 8;

/// Bytes of one stage: 64 W rows and 8 NT x rows.
__host__ __device__ constexpr int bulk_stage_bytes(int NT) { return (kBulkRows + 8 * NT) * kBulkPitch; }
/// Dynamic shared memory of a launch: the stages, then 2 S mbarriers.
__host__ __device__ constexpr int bulk_smem_bytes(int NT, int S) { return S * bulk_stage_bytes(NT) + 2 * S * 8; }

/// What one kBulk launch computes (built by launch_gemv_rows).
struct GemvBulkParams {
  const bf16* W = nullptr;   ///< [N, K]
  const bf16* x = nullptr;   ///< [T, K]
  float* out_f32 = nullptr;  ///< [T, N] (kStore, kResidual)
  bf16* out_bf16 = nullptr;  ///< [T, N / 2] (kSwiGLU)
  float4* clear = nullptr;   ///< zero-filled after the wait, clear_n4 float4s
  long long clear_n4 = 0;
  int N = 0, K = 0, T = 0;
  int tiles = 0;    ///< ceil(N / 64)
  int splits = 1;   ///< K splits; item i is split i / tiles of tile i % tiles
  int split_k = 0;  ///< k of a split, a multiple of kBulkK (the last may be shorter)
};

/// A work item's extent.
struct BulkItem {
  int n0, rows;  ///< first W row, W rows (<= 64, a multiple of 16)
  int k0, klen;  ///< first k, k count (a multiple of 8)
  __device__ BulkItem(const GemvBulkParams& p, int i) {
    n0 = (i % p.tiles) * kBulkRows;
    rows = min(kBulkRows, p.N - n0);
    k0 = (i / p.tiles) * p.split_k;
    klen = min(p.split_k, p.K - k0);
  }
  __device__ int chunks() const { return (klen + kBulkK - 1) / kBulkK; }
  __device__ int chunk_k(int c) const { return min(kBulkK, klen - c * kBulkK); }
};

/// The producer warp's copies of item `it`'s chunk c: its W rows into their slots, or its x rows.
__device__ __forceinline__ void bulk_issue_w(const GemvBulkParams& p, const BulkItem& it, int c, char* stage,
                                             uint64_t* full, uint64_t policy) {
  const int lane = threadIdx.x & 31, kc = it.chunk_k(c);
  for (int r = lane; r < it.rows; r += 32)
    bulk_copy_g2s(stage + ((r & 1) * 32 + (r >> 1)) * kBulkPitch,
                  p.W + static_cast<size_t>(it.n0 + r) * p.K + it.k0 + c * kBulkK, kc * 2, full, policy);
}

__device__ __forceinline__ void bulk_issue_x(const GemvBulkParams& p, const BulkItem& it, int c, char* stage,
                                             uint64_t* full, uint64_t policy) {
  const int lane = threadIdx.x & 31, kc = it.chunk_k(c);
  if (lane < p.T)
    bulk_copy_g2s(stage + (kBulkRows + lane) * kBulkPitch, p.x + static_cast<size_t>(lane) * p.K + it.k0 + c * kBulkK,
                  kc * 2, full, policy);
}

/// NT n-tiles of 8 x rows: 1 for T <= 8, 2 for T <= 16, 4 for T <= 32; S stages. Block kBulkThreads, dynamic
/// shared memory bulk_smem_bytes(NT, S).
template <int NT, GemvRowsOutput OUT, int S = kBulkStages>
__global__ void __launch_bounds__(kBulkThreads, 1) gemv_rows_bulk_kernel(const GemvBulkParams p) {
  extern __shared__ __align__(128) char bulk_smem[];
  constexpr int kStage = bulk_stage_bytes(NT);
  uint64_t* full = reinterpret_cast<uint64_t*>(bulk_smem + S * kStage);
  uint64_t* empty = full + S;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int items = p.tiles * p.splits;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kBulkConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp == kBulkConsumers) {
    // The producer. Before the PDL wait: the W rows of the ring's first stages (their full
    // barriers expect the x rows too, copied after the wait).
    const uint64_t w_policy = l2_evict_first(), x_policy = l2_evict_last();
    int issued = 0, item = static_cast<int>(blockIdx.x), c = 0;
    for (; issued < S && item < items; ++issued) {
      const BulkItem it(p, item);
      if (lane == 0) mbar_arrive_expect_tx(&full[issued], (it.rows + p.T) * it.chunk_k(c) * 2);
      __syncwarp();
      bulk_issue_w(p, it, c, bulk_smem + issued * kStage, &full[issued], w_policy);
      if (++c == it.chunks()) c = 0, item += static_cast<int>(gridDim.x);
    }
    grid_dependency_wait();
    launch_dependents();
    {
      int item2 = static_cast<int>(blockIdx.x), c2 = 0;
      for (int j = 0; j < issued; ++j) {
        const BulkItem it(p, item2);
        bulk_issue_x(p, it, c2, bulk_smem + j * kStage, &full[j], x_policy);
        if (++c2 == it.chunks()) c2 = 0, item2 += static_cast<int>(gridDim.x);
      }
    }
    for (; item < items; ++issued) {
      const BulkItem it(p, item);
      const int s = issued % S;
      mbar_wait(&empty[s], ((issued / S) - 1) & 1);
      if (lane == 0) mbar_arrive_expect_tx(&full[s], (it.rows + p.T) * it.chunk_k(c) * 2);
      __syncwarp();
      bulk_issue_w(p, it, c, bulk_smem + s * kStage, &full[s], w_policy);
      bulk_issue_x(p, it, c, bulk_smem + s * kStage, &full[s], x_policy);
      if (++c == it.chunks()) c = 0, item += static_cast<int>(gridDim.x);
    }
    return;
  }

  // Consumers.
  grid_dependency_wait();
  launch_dependents();
  if (p.clear) {
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long i = static_cast<long long>(blockIdx.x) * (kBulkConsumers * 32) + threadIdx.x; i < p.clear_n4;
         i += static_cast<long long>(gridDim.x) * (kBulkConsumers * 32))
      p.clear[i] = z;
  }
  const int g = lane >> 2, q = lane & 3;
  // This lane's ldmatrix row addresses within a stage (bytes): A from slot
  // ((lane / 8) & 1) * 32 + 8 warp + lane % 8 at k offset (lane / 16) * 8; B from x row
  // (lane / 16) * 8 + lane % 8 (NT = 2; lane % 8 for NT = 1) at k offset ((lane / 8) & 1) * 8.
  const int a_off = (((lane >> 3) & 1) * 32 + 8 * warp + (lane & 7)) * kBulkPitch + (lane >> 4) * 16;
  const int b_row = NT >= 2 ? (lane >> 4) * 8 + (lane & 7) : (lane & 7);
  const int b_off = (kBulkRows + b_row) * kBulkPitch + ((lane >> 3) & 1) * 16;
  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  int used = 0;
  for (int item = static_cast<int>(blockIdx.x); item < items; item += static_cast<int>(gridDim.x)) {
    const BulkItem it(p, item);
    const bool active = 16 * warp < it.rows;  // warp-uniform: N is a multiple of 16
    const int nch = it.chunks();
    for (int c = 0; c < nch; ++c, ++used) {
      const int s = used % S;
      mbar_wait(&full[s], (used / S) & 1);
      if (active) {
        const char* st = bulk_smem + s * kStage;
        const int kc = it.chunk_k(c);
        const int steps = (kc + 15) / 16;
        const bool half = (kc & 15) != 0;  // the last step holds 8 k
#pragma unroll
        for (int j = 0; j < kBulkK / 16; ++j) {
          if (j < steps) {
            unsigned a[4];
            ldmatrix_x4(a, st + a_off + j * 32);
            unsigned b[NT][2];
            if constexpr (NT >= 2) {
#pragma unroll
              for (int pr = 0; pr < NT / 2; ++pr) {  // n-tiles 2 pr and 2 pr + 1: x rows 16 pr ..
                unsigned r[4];
                ldmatrix_x4(r, st + b_off + pr * 16 * kBulkPitch + j * 32);
                b[2 * pr][0] = r[0], b[2 * pr][1] = r[1], b[2 * pr + 1][0] = r[2], b[2 * pr + 1][1] = r[3];
              }
            } else {
              ldmatrix_x2(b[0], st + b_off + j * 32);
            }
            if (half && j == steps - 1) {
              a[2] = a[3] = 0u;
#pragma unroll
              for (int nt = 0; nt < NT; ++nt) b[nt][1] = 0u;
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
    // C fragment: acc[nt][h] is y[t = 8 nt + 2q + h, row 2g], acc[nt][2 + h] the same t, row 2g + 1.
    const int n0 = it.n0 + 16 * warp + 2 * g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int t = 8 * nt + 2 * q + h;
        if (t >= p.T) continue;
        const float y0 = acc[nt][h], y1 = acc[nt][2 + h];
        if constexpr (OUT == GemvRowsOutput::kSwiGLU) {
          p.out_bf16[static_cast<size_t>(t) * (p.N / 2) + n0 / 2] = __float2bfloat16(silu(y0) * y1);
        } else {
          float* o = p.out_f32 + static_cast<size_t>(t) * p.N + n0;
          if constexpr (OUT == GemvRowsOutput::kStore) {
            *reinterpret_cast<float2*>(o) = make_float2(y0, y1);
          } else if (p.splits == 1) {
            const float2 r = *reinterpret_cast<const float2*>(o);
            *reinterpret_cast<float2*>(o) = make_float2(r.x + y0, r.y + y1);
          } else {
            atomic_add2(o, y0, y1);
          }
        }
      }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  }
}

}  // namespace lg::qwen::dev
