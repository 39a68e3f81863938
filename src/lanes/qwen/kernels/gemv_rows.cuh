// Tensor-core GEMV for a few rows (the batched decode step's projections, T <= 16 sequences):
// y[t, n] = sum_k x[t, k] W[n, k], W bf16 [N, K] row-major, x bf16 [T, K], fp32 accumulation.
// At T <= 16 the step is still bound by reading W once (T * 2 flops per weight byte, far below
// the H200's ~200 flops/byte), so the kernel is gemv.cuh's weight stream with the dot products
// done by mma.sync.m16n8k16 (bf16 in, fp32 accumulate) instead of T fp32 FMAs per weight.
//
// MMA mapping (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type"; lane =
// 4 g + q, g = groupID 0..7, q = threadID_in_group 0..3):
//   A (16 x 16, row) = 16 weight rows x 16 k: MMA row g is weight row 2g of the tile, row g + 8
//     is weight row 2g + 1, so a thread's accumulators hold both rows of a SwiGLU pair (the gate
//     and up rows are interleaved at upload) and the epilogues need no shuffle;
//   B (16 x 8, col) = 16 k x 8 batch rows t (two n-tiles for T 9..16);
//   C (16 x 8) = y for those rows and columns.
//   k-permutation: a lane's A registers a0/a2 (row g) hold logical k (2q, 2q+1) and (2q+8, 2q+9);
//   those of two consecutive MMAs are 4 pairs, which we let be the 8 contiguous bf16 of ONE
//   16-byte load, W[row, 8 (c0 + q) .. 8 (c0 + q) + 7] (c0: the step's first 16-byte chunk): elements
//   0-1 -> MMA 0 a0, 2-3 -> MMA 0 a2, 4-5 -> MMA 1 a0, 6-7 -> MMA 1 a2 (row 2g + 1 likewise into
//   a1/a3). B's b0/b1 hold the same logical k of column g, so the same permutation applied to x
//   makes them one 16-byte load of x[t = g, 8 (c0 + q) ..]. A sum over k does not care about the
//   order: each step (32 k) is 2 x 16 B of W and 1 x 16 B of x per lane per n-tile, 2 MMAs each.
// Work split: the work items are (16-row tile, K split); a persistent grid of a few 4-warp blocks
// per SM whose warps stride over the items, split-major (a block's warps share a K range, so the
// x rows they read through L1 are the same lines). Each lane keeps kRowsDepth steps of W loads in
// flight (2 x 16 B each, 8 KB per warp), refilled one step at a time as it is consumed (a rolling
// pipeline that crosses into the warp's next item); the first steps are issued before the PDL
// wait (weights never depend on the previous kernel, pdl.cuh). W is read with
// L1::no_allocate (streamed once: it must not evict x from L1); x with __ldg at its use (an L1
// hit after the first warp of the SM reads the line: x is T * K * 2 bytes, as large as a 16-row
// tile of W at T = 16, so reading it from L2 per warp would double the L2 traffic).
// Split-K exists because N / 16 tiles do not fill 132 SMs x 16 warps at N = 4096 (256 tiles).
// The splits' sums are not added atomically (fp32 addition in arrival order changes the last bits
// run to run, and a sampled sequence then parts from its rerun: bench/RESULTS.md, thirty-third
// session): each split stores its partial, and the last of a 16-row tile's splits to arrive (a
// counter per tile) adds them in split order (split_sum_epilogue; CUTLASS's "serial split-K"
// semaphore does the same in split order by waiting, this one never waits). The store and
// SwiGLU epilogues take one split (SwiGLU's gate/up has N = 2 x 12288 at 8B, 1536 tiles: enough).
// A store into a buffer zeroed beforehand is the residual form: `clear` lets an earlier kernel
// do the zeroing after its own PDL wait (what the batched decode's QKV projection uses).
#pragma once

#include <cuda_bf16.h>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kRowsThreads = 128;
constexpr int kRowsWarps = kRowsThreads / 32;
/// 32-k steps of W loads in flight per lane: 2 x 16 B each, 8 KB per warp, 128 KB per SM at 4
/// blocks (gemv.cuh's figure); 16 x 4 registers.
constexpr int kRowsDepth = 8;
/// Blocks per SM the registers allow (__launch_bounds__): 128 registers a thread.
constexpr int kRowsMaxBlocksPerSm = 4;

/// What one launch computes (built by launch_gemv_rows from GemvRowsArgs).
struct GemvRowsParams {
  const uint4* W = nullptr;  ///< [N, K / 8] chunks of 8 bf16
  const uint4* x = nullptr;  ///< [T, K / 8]
  float* out_f32 = nullptr;  ///< [T, N] (kStore, kResidual)
  bf16* out_bf16 = nullptr;  ///< [T, N / 2] (kSwiGLU)
  float4* clear = nullptr;   ///< zero-filled after the wait, clear_n4 float4s
  long long clear_n4 = 0;
  int N = 0, nc = 0, T = 0;  ///< nc = K / 8
  int tiles = 0;             ///< N / 16
  int splits = 1;            ///< K splits; item i is split i / tiles of tile i % tiles
  float* partials = nullptr;  ///< [splits, T, N]: kResidual with splits > 1, kSlices (GemvRowsArgs::partials)
  int* arrivals = nullptr;    ///< [N / 16], zero between launches
  int split_chunks = 0;      ///< 16-byte chunks per split, a multiple of 4 (the last may be shorter)
};

/// 16 bytes of a weight row: read-only and streamed once, so not kept in L1.
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

/// d += a (16 x 16 bf16, row) * b (16 x 8 bf16, col), fp32 accumulators (as flash_attention.cuh).
__device__ __forceinline__ void mma_16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                          unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// out[0..1] += v for two adjacent floats (8-byte aligned): one vector atomic on sm_90. Only the
/// lab's atomic split form (LG_QWEN_ROWS_ATOMIC_SPLITS=1) adds so.
__device__ __forceinline__ void atomic_add2(float* out, float v0, float v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(out), make_float2(v0, v1));
#else
  atomicAdd(out, v0);
  atomicAdd(out + 1, v1);
#endif
}

/// *p += v at GPU scope with acquire-release semantics; the old value.
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

/// Where a kResidual launch's K splits meet (GemvRowsArgs::partials): this item's split index, the
/// partials [splits, T, N] and the arrival counters [N / 16]. partials null: the splits add into
/// out atomically (the lab's A/B form; not deterministic).
struct SplitSum {
  float* partials;
  int* arrivals;
  int split;
};

/// Calls f(t, nt, h) for each of this lane's C-fragment rows t = 8 nt + 2 q + h below T (its
/// outputs acc[nt][h] and acc[nt][2 + h], weight rows n0 and n0 + 1 at row t).
template <int NT, class F>
__device__ __forceinline__ void for_lane_rows(int q, int T, F&& f) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (8 * nt + 2 * q + h < T) f(8 * nt + 2 * q + h, nt, h);
}

/// Where split `split`'s sums of row t, weight rows n0 and n0 + 1, go in the partials [splits, T, N].
__device__ __forceinline__ float* slice_at(float* partials, int split, int t, int T, int N, int n0) {
  return partials + (static_cast<size_t>(split) * T + t) * N + n0;
}

/// The kResidual epilogue of one of several K splits, a warp's 16-row tile (every lane calls it;
/// n0 = this lane's first row, 16-row tile n0 / 16): the warp stores its partial sums, and if it is
/// the tile's last split to arrive, adds the splits' partials in split order to out and returns
/// the tile's counter to zero. The counter's add is acquire-release at GPU scope behind a warp
/// barrier (CUTLASS's split-K semaphore: a barrier, then one thread's release); the partials are
/// read past L1 (__ldcg), four splits' loads in flight at once: this runs at the launch's tail,
/// where each round trip to L2 is on the step's critical path.
template <int NT>
__device__ __forceinline__ void split_sum_epilogue(const float (&acc)[NT][4], int n0, int q, int T, int N,
                                                   int splits, float* out, const SplitSum& ss) {
  for_lane_rows<NT>(q, T, [&](int t, int nt, int h) {
    *reinterpret_cast<float2*>(slice_at(ss.partials, ss.split, t, T, N, n0)) = make_float2(acc[nt][h], acc[nt][2 + h]);
  });
  __syncwarp();
  int last = 0;
  if ((threadIdx.x & 31) == 0) {
    int* counter = ss.arrivals + n0 / 16;
    last = atomic_add_acq_rel_gpu(counter, 1) == splits - 1;
    if (last) *counter = 0;  // every split of the tile has counted: the next launch starts at zero
  }
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  __syncwarp();  // the other lanes' loads after lane 0's acquire
  float2 sum[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) sum[nt][0] = sum[nt][1] = make_float2(0.f, 0.f);
  for (int sp0 = 0; sp0 < splits; sp0 += 4) {
    float2 v[4][NT][2];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int t = 8 * nt + 2 * q + h;
          v[j][nt][h] = sp0 + j < splits && t < T
                            ? __ldcg(reinterpret_cast<const float2*>(slice_at(ss.partials, sp0 + j, t, T, N, n0)))
                            : make_float2(0.f, 0.f);
        }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (sp0 + j < splits) sum[nt][h].x += v[j][nt][h].x, sum[nt][h].y += v[j][nt][h].y;
  }
  for_lane_rows<NT>(q, T, [&](int t, int nt, int h) {
    float2* o = reinterpret_cast<float2*>(out + static_cast<size_t>(t) * N + n0);
    const float2 r = *o;
    *o = make_float2(r.x + sum[nt][h].x, r.y + sum[nt][h].y);
  });
}

/// Writes a thread's C fragments of a 16-row tile and zeroes them: acc[nt][h] is y[t = 8 nt + 2 q
/// + h, row n0] and acc[nt][2 + h] the same t, row n0 + 1 (the MMA rows of both forms map weight
/// rows 2 i and 2 i + 1 to one thread). kStore / kResidual write out_f32 [T, N] (residual: += with
/// one K split, through split_sum_epilogue with more); kSwiGLU writes out_bf16 [T, N / 2] from the
/// (gate, up) pair; kSlices writes ss.partials[ss.split] [T, N]. Every lane of the warp calls it.
template <int NT, GemvRowsOutput OUT>
__device__ __forceinline__ void rows_epilogue(float (&acc)[NT][4], int n0, int q, int T, int N, int splits,
                                              float* out_f32, bf16* out_bf16, const SplitSum& ss) {
  if constexpr (OUT == GemvRowsOutput::kResidual) {
    if (splits > 1 && ss.partials) split_sum_epilogue<NT>(acc, n0, q, T, N, splits, out_f32, ss);
  }
  if (OUT != GemvRowsOutput::kResidual || splits == 1 || !ss.partials) {
    for_lane_rows<NT>(q, T, [&](int t, int nt, int h) {
      const float y0 = acc[nt][h], y1 = acc[nt][2 + h];
      if constexpr (OUT == GemvRowsOutput::kSwiGLU) {
        out_bf16[static_cast<size_t>(t) * (N / 2) + n0 / 2] = __float2bfloat16(silu(y0) * y1);
      } else {
        float* o = OUT == GemvRowsOutput::kSlices ? slice_at(ss.partials, ss.split, t, T, N, n0)
                                                  : out_f32 + static_cast<size_t>(t) * N + n0;
        if constexpr (OUT == GemvRowsOutput::kStore || OUT == GemvRowsOutput::kSlices) {
          *reinterpret_cast<float2*>(o) = make_float2(y0, y1);
        } else if (splits == 1) {
          const float2 r = *reinterpret_cast<const float2*>(o);
          *reinterpret_cast<float2*>(o) = make_float2(r.x + y0, r.y + y1);
        } else {
          atomic_add2(o, y0, y1);
        }
      }
    });
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
}

/// NT n-tiles of 8 batch rows: 1 for T <= 8, 2 for T <= 16.
template <int NT, GemvRowsOutput OUT>
__global__ void __launch_bounds__(kRowsThreads, kRowsMaxBlocksPerSm) gemv_rows_kernel(const GemvRowsParams p) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int items = p.tiles * p.splits;
  const int stride = static_cast<int>(gridDim.x) * kRowsWarps;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);

  // Item i: split i / tiles (a block's warps share it), tile i % tiles; its chunks [cb, ce).
  auto chunk_begin = [&](int i) { return (i / p.tiles) * p.split_chunks; };
  auto chunk_end = [&](int i) { return min(p.nc, (i / p.tiles + 1) * p.split_chunks); };
  // This lane's weight rows in item i: 2g and 2g + 1 of the tile (see the top comment).
  auto row_ptr = [&](int i) { return p.W + static_cast<size_t>((i % p.tiles) * 16 + 2 * g) * p.nc; };

  uint4 w0[kRowsDepth], w1[kRowsDepth];
  int item = static_cast<int>(blockIdx.x) * kRowsWarps + static_cast<int>(threadIdx.x >> 5);
  int c0 = 0;
  if (item < items) {
    c0 = chunk_begin(item);
    const int ce = chunk_end(item);
    const uint4* r0 = row_ptr(item);
#pragma unroll
    for (int j = 0; j < kRowsDepth; ++j) {
      const int c = c0 + 4 * j + q;
      w0[j] = c < ce ? ld_stream(r0 + c) : zero;
      w1[j] = c < ce ? ld_stream(r0 + p.nc + c) : zero;
    }
  }

  grid_dependency_wait();
  launch_dependents();
  if (p.clear) {
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long i = static_cast<long long>(blockIdx.x) * kRowsThreads + threadIdx.x; i < p.clear_n4;
         i += static_cast<long long>(gridDim.x) * kRowsThreads)
      p.clear[i] = z;
  }

  // x rows of this lane's B columns: g and 8 + g, clamped to T - 1 (a column t >= T only feeds
  // C column t, which no epilogue writes).
  const uint4* xr[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xr[nt] = p.x + static_cast<size_t>(min(8 * nt + g, p.T - 1)) * p.nc;

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;

  while (item < items) {
    const int ce = chunk_end(item);
    // Where the loads refilled below come from: the item's next kRowsDepth steps, else the
    // warp's next item from its start.
    int next = item, nc0 = c0 + 4 * kRowsDepth;
    if (nc0 >= ce) {
      next = item + stride;
      nc0 = next < items ? chunk_begin(next) : 0;
    }
    const bool more = next < items;
    const int nce = more ? chunk_end(next) : 0;
    const uint4* nr0 = row_ptr(more ? next : item);
#pragma unroll
    for (int j = 0; j < kRowsDepth; ++j) {
      if (c0 + 4 * j < ce) {  // warp-uniform: the step holds chunks of this item
        const int c = c0 + 4 * j + q;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint4 xv = c < ce ? __ldg(xr[nt] + c) : zero;
          mma_16816(acc[nt], w0[j].x, w1[j].x, w0[j].y, w1[j].y, xv.x, xv.y);
          mma_16816(acc[nt], w0[j].z, w1[j].z, w0[j].w, w1[j].w, xv.z, xv.w);
        }
      }
      if (more) {
        const int c = nc0 + 4 * j + q;
        w0[j] = c < nce ? ld_stream(nr0 + c) : zero;
        w1[j] = c < nce ? ld_stream(nr0 + p.nc + c) : zero;
      }
    }
    if (next != item) {
      rows_epilogue<NT, OUT>(acc, (item % p.tiles) * 16 + 2 * g, q, p.T, p.N, p.splits, p.out_f32, p.out_bf16,
                             SplitSum{p.partials, p.arrivals, item / p.tiles});
    }
    item = next;
    c0 = nc0;
  }
}

}  // namespace lg::qwen::dev
