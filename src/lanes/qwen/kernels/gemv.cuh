// Decode GEMV, y = W x for one token: W bf16 [N, K] row-major streamed once with 16-byte loads,
// x staged in shared memory as bf16. Decode at batch 1 is bound by reading W, so everything else
// (the RMSNorm before it; the residual add, SwiGLU or argmax after it) is fused
// here to skip launches and round trips through device memory.
//   Prologue kRmsNorm: x = rms_norm(x_f32, norm_w, eps), computed once per block, rounded to bf16
//                      as bf16((x * w) * inv_rms) (the prefill kernel forms (x * inv_rms) * w:
//                      the same value up to one fp32 rounding).
//   Prologue kBf16:    x = in_bf16 (attention output, SwiGLU activation).
//   Epilogues: see GemvOutput in kernels.h. (The decode QKV is a plain kStore: the decode
//   attention applies bias, qk-norm and RoPE and writes the KV cache, attention_decode.cuh.)
// Layout of the work (v2, bench/qwen_lane.md): a persistent grid of a few blocks per SM; each
// warp owns a pair of adjacent rows at a time (a SwiGLU pair never crosses warps)
// and strides over the row pairs by the number of warps in the grid, so the prologue runs once
// per block instead of once per 8 rows and every SM gets the same number of rows. Each lane keeps
// 2 x kGemvDepth 16-byte loads in flight; the first batch is issued before the prologue and
// before the wait on the previous kernel (weights never depend on it: pdl.cuh), and the next
// row pair's first batch before the current pair's reduction and epilogue. The prologue follows
// the wait, so it is on every launch's critical path: its loads go out in batches.
#pragma once

#include <climits>

#include "kernels/launch_policy.h"
#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kGemvThreads = 128;
constexpr int kGemvWarps = kGemvThreads / 32;
constexpr int kGemvDepth = 8;  // 16-byte loads in flight per lane and row
constexpr int kGemvMaxHeadDim = 256;
/// Largest K whose RMSNorm prologue stages x * w in shared memory: K * (2 + 4) bytes of dynamic
/// shared memory plus the static 4.2 KB stay under the 48 KB a launch may use without opting in.
constexpr int kGemvNormStageMaxK = 6144;

/// Dynamic shared memory of one GEMV block: the bf16 input vector, and x * w in f32 (see above).
constexpr size_t gemv_smem_bytes(GemvInput in, int K) {
  return static_cast<size_t>(K) * 2 + (in == GemvInput::kRmsNorm && K <= kGemvNormStageMaxK ? static_cast<size_t>(K) * 4 : 0);
}

/// Thread 0 ends with the best of the block's warps' (bv, bi), each warp's held by its lane 0.
__device__ __forceinline__ void block_best(float& bv, int& bi, float* s_v, int* s_i) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_v[warp] = bv;
    s_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < kGemvWarps; ++w) lg_argmax_take(bv, bi, s_v[w], s_i[w]);
}

/// kStoreArgmax, after the block's rows: the block's best (value, index) goes to the sync area;
/// the last block to finish reduces all of them into *a.argmax_out.
__device__ void argmax_epilogue(const GemvArgs& a, float bv, int bi) {
  __shared__ float s_v[kGemvWarps];
  __shared__ int s_i[kGemvWarps];
  __shared__ bool s_last;
  float* part_v = reinterpret_cast<float*>(a.sync + kGemvSyncArgmaxValues);
  int* part_i = a.sync + kGemvSyncArgmaxIndices;
  block_best(bv, bi, s_v, s_i);
  if (threadIdx.x == 0) {
    part_v[blockIdx.x] = bv;
    part_i[blockIdx.x] = bi;
    s_last = arrive_last(a.sync + kGemvSyncArgmaxCounter, 1, static_cast<int>(gridDim.x));
  }
  __syncthreads();
  if (!s_last) return;
  bv = kNegInf;
  bi = INT_MAX;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += blockDim.x) lg_argmax_take(bv, bi, __ldcg(part_v + b), __ldcg(part_i + b));
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    lg_argmax_take(bv, bi, ov, oi);
  }
  __syncthreads();  // s_v, s_i are read by thread 0 above
  block_best(bv, bi, s_v, s_i);
  if (threadIdx.x == 0) *a.argmax_out = bi == INT_MAX ? 0 : bi;  // all NaN: 0, as the old argmax kernel did
}

template <GemvInput IN, GemvOutput OUT>
__global__ void __launch_bounds__(kGemvThreads, lg::kernels::kGemvBlocksPerSm) gemv_kernel(const GemvArgs a) {
  extern __shared__ uint4 s_x[];  // K / 8 chunks of 8 bf16
  __shared__ float scratch[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int npairs = a.N / 2, nc = a.K / 8;
  const int grid_warps = static_cast<int>(gridDim.x) * kGemvWarps;
  const uint4* W4 = reinterpret_cast<const uint4*>(a.W);
  uint4 u0[kGemvDepth], u1[kGemvDepth];
  auto load = [&](int pair, int c0) {
    const uint4* w0 = W4 + static_cast<size_t>(2 * pair) * nc;
    const uint4* w1 = w0 + nc;
#pragma unroll
    for (int j = 0; j < kGemvDepth; ++j) {
      const int c = c0 + lane + 32 * j;
      if (c < nc) {
        u0[j] = __ldg(w0 + c);
        u1[j] = __ldg(w1 + c);
      }
    }
  };
  int pair = blockIdx.x * kGemvWarps + warp;
  if (pair < npairs) load(pair, 0);

  grid_dependency_wait();
  // The prologue is on the critical path of every launch (it follows the wait): loads in batches
  // of kPrologueBatch per thread, all issued before use, so a pass costs a round trip or two to
  // L2 rather than one per element.
  constexpr int kPrologueBatch = 4;
  const int nt = blockDim.x;
  if constexpr (IN == GemvInput::kRmsNorm) {
    const float4* x4 = reinterpret_cast<const float4*>(a.x_f32);
    const float4* w4 = reinterpret_cast<const float4*>(a.norm_w);
    const int n4 = a.K / 4;
    // Up to kGemvNormStageMaxK, x * w goes to shared memory (f32, after the bf16 vector; the
    // launcher sized it) in the pass that sums the squares, so the second pass reads no global
    // memory. Larger K: the second pass reads x and w again.
    const bool staged = a.K <= kGemvNormStageMaxK;
    float4* s_xw = reinterpret_cast<float4*>(s_x + nc);
    float ss = 0.f;
    for (int c0 = threadIdx.x; c0 < n4; c0 += kPrologueBatch * nt) {
      float4 v[kPrologueBatch], w[kPrologueBatch];
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b)
        if (c0 + b * nt < n4) {
          v[b] = x4[c0 + b * nt];
          if (staged) w[b] = w4[c0 + b * nt];
        }
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b) {
        if (c0 + b * nt >= n4) continue;
        ss = fmaf(v[b].x, v[b].x, fmaf(v[b].y, v[b].y, fmaf(v[b].z, v[b].z, fmaf(v[b].w, v[b].w, ss))));
        if (staged) s_xw[c0 + b * nt] = make_float4(v[b].x * w[b].x, v[b].y * w[b].y, v[b].z * w[b].z, v[b].w * w[b].w);
      }
    }
    const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(a.K) + a.eps);
    __nv_bfloat162* s2 = reinterpret_cast<__nv_bfloat162*>(s_x);
    // Each thread reads back only the elements it staged (same index pattern).
    if (staged) {
      for (int c = threadIdx.x; c < n4; c += nt) {
        const float4 xw = s_xw[c];
        s2[2 * c] = __floats2bfloat162_rn(xw.x * inv, xw.y * inv);
        s2[2 * c + 1] = __floats2bfloat162_rn(xw.z * inv, xw.w * inv);
      }
    }
    for (int c0 = threadIdx.x; !staged && c0 < n4; c0 += kPrologueBatch * nt) {
      float4 v[kPrologueBatch], w[kPrologueBatch];
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b)
        if (c0 + b * nt < n4) {
          v[b] = x4[c0 + b * nt];
          w[b] = w4[c0 + b * nt];
        }
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b) {
        const int c = c0 + b * nt;
        if (c >= n4) continue;
        s2[2 * c] = __floats2bfloat162_rn(v[b].x * inv * w[b].x, v[b].y * inv * w[b].y);
        s2[2 * c + 1] = __floats2bfloat162_rn(v[b].z * inv * w[b].z, v[b].w * inv * w[b].w);
      }
    }
  } else {
    const uint4* src = reinterpret_cast<const uint4*>(a.in_bf16);
    for (int c0 = threadIdx.x; c0 < nc; c0 += kPrologueBatch * nt) {
      uint4 v[kPrologueBatch];
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b)
        if (c0 + b * nt < nc) v[b] = src[c0 + b * nt];
#pragma unroll
      for (int b = 0; b < kPrologueBatch; ++b)
        if (c0 + b * nt < nc) s_x[c0 + b * nt] = v[b];
    }
  }
  __syncthreads();
  launch_dependents();

  float best_v = kNegInf;
  int best_i = INT_MAX;
  for (; pair < npairs; pair += grid_warps) {
    float a0 = 0.f, a1 = 0.f;
    for (int c0 = 0;;) {
#pragma unroll
      for (int j = 0; j < kGemvDepth; ++j) {
        const int c = c0 + lane + 32 * j;
        if (c < nc) {
          const uint4 xv = s_x[c];
          a0 += dot8(u0[j], xv);
          a1 += dot8(u1[j], xv);
        }
      }
      c0 += 32 * kGemvDepth;
      if (c0 < nc) {
        load(pair, c0);
        continue;
      }
      if (pair + grid_warps < npairs) load(pair + grid_warps, 0);
      break;
    }
    a0 = lg_warp_sum(a0);
    a1 = lg_warp_sum(a1);
    const int row = 2 * pair;
    if constexpr (OUT == GemvOutput::kStore || OUT == GemvOutput::kStoreArgmax) {
      if (lane == 0) {
        a.out_f32[row] = a0;
        a.out_f32[row + 1] = a1;
      }
    } else if constexpr (OUT == GemvOutput::kResidual) {
      if (lane == 0) {
        a.out_f32[row] += a0;
        a.out_f32[row + 1] += a1;
      }
    } else {
      if (lane == 0) a.out_bf16[pair] = __float2bfloat16(silu(a0) * a1);
    }
    if constexpr (OUT == GemvOutput::kStoreArgmax) {
      lg_argmax_take(best_v, best_i, a0, row);
      lg_argmax_take(best_v, best_i, a1, row + 1);
    }
  }
  if constexpr (OUT == GemvOutput::kStoreArgmax) argmax_epilogue(a, best_v, best_i);
}

}  // namespace lg::qwen::dev
