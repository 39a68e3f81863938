// Decode attention (one query per head at position pos = *pos0, keys 0..pos of the bf16 KV cache),
// causal GQA, fp32 online softmax (Milakov & Gimelshein 2018; FlashAttention's split-KV form,
// "Flash-Decoding"). Query head h reads KV head h / (H / KV).
// Grid (H, kDecodeSplits): block (h, s) takes the s-th chunk of the positions (the chunk length
// and the number of chunks come from the length read on the device, so one captured graph serves
// every position; blocks past the last chunk exit at once). Its
// 4 warps take kDecodeKeysPerWarp keys at a time, all their K and V loads issued before the
// math, so a chunk costs a couple of memory round trips rather than one per key. Each lane holds
// Dh / 32 contiguous elements of q and of the output (Dh = 16: half a warp, one each). The block
// writes its partial (max, sum, unnormalised output); the last block of head h to finish
// (pdl.cuh: arrive_last) merges the partials and writes the bf16 output, which
// used to be a second launch.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

constexpr int kDecodeWarps = 4;
constexpr int kDecodeSplits = 32;
constexpr int kDecodeMinSplitLen = 32;
constexpr int kDecodeKeysPerWarp = 8;  // kDecodeWarps x 8 = kDecodeMinSplitLen: a short chunk is one pass

/// The slice of a head_dim-DH row one lane holds: EPL contiguous elements from lane * EPL.
template <int DH> struct DecodeSlice {
  static constexpr int EPL = DH >= 32 ? DH / 32 : 1;
  static constexpr int kActiveLanes = DH >= 32 ? 32 : DH;
};

template <int DH>
__device__ __forceinline__ void load_bf16_slice(const bf16* row, float (&out)[DecodeSlice<DH>::EPL]) {
  constexpr int EPL = DecodeSlice<DH>::EPL;
  const int lane = threadIdx.x & 31;
  if (lane >= DecodeSlice<DH>::kActiveLanes) {
#pragma unroll
    for (int e = 0; e < EPL; ++e) out[e] = 0.f;
    return;
  }
  if constexpr (EPL == 4) {
    const uint2 u = *reinterpret_cast<const uint2*>(row + 4 * lane);
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
    out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y;
  } else if constexpr (EPL == 2) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(row + 2 * lane));
    out[0] = a.x, out[1] = a.y;
  } else {
    out[0] = __bfloat162float(row[lane]);
  }
}

template <int DH>
__global__ void __launch_bounds__(kDecodeWarps * 32) attn_decode_kernel(const float* __restrict__ q_all,
                                                                        const bf16* __restrict__ k_cache,
                                                                        const bf16* __restrict__ v_cache,
                                                                        const int* __restrict__ pos0, int H, int KV,
                                                                        int S, float scale, float* partial,
                                                                        int* counters, bf16* __restrict__ out) {
  constexpr int EPL = DecodeSlice<DH>::EPL, R = kDecodeKeysPerWarp;
  __shared__ float s_m[kDecodeWarps], s_l[kDecodeWarps], s_o[kDecodeWarps][DH];
  __shared__ bool s_last;
  grid_dependency_wait();
  launch_dependents();
  const int h = blockIdx.x, split = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bool active = lane < DecodeSlice<DH>::kActiveLanes;
  const int len = *pos0 + 1;
  const int chunk = max(kDecodeMinSplitLen, (len + kDecodeSplits - 1) / kDecodeSplits);
  const int nsplits = (len + chunk - 1) / chunk;  // the same in every block of the launch
  if (split >= nsplits) return;                    // past the end: not counted, not merged
  const int k0 = split * chunk, k1 = min(len, k0 + chunk);
  const size_t base = static_cast<size_t>(h / (H / KV)) * S * DH;

  float q[EPL];
  if (active) {
#pragma unroll
    for (int e = 0; e < EPL; ++e) q[e] = q_all[static_cast<size_t>(h) * DH + lane * EPL + e];
  } else {
#pragma unroll
    for (int e = 0; e < EPL; ++e) q[e] = 0.f;
  }
  float m = kNegInf, l = 0.f, acc[EPL] = {};
  for (int j = k0 + warp * R; j < k1; j += kDecodeWarps * R) {
    float kr[R][EPL], vr[R][EPL], s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int key = min(j + r, k1 - 1);  // past the chunk: a valid row, masked below
      load_bf16_slice<DH>(k_cache + base + static_cast<size_t>(key) * DH, kr[r]);
      load_bf16_slice<DH>(v_cache + base + static_cast<size_t>(key) * DH, vr[r]);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float d = 0.f;
#pragma unroll
      for (int e = 0; e < EPL; ++e) d = fmaf(q[e], kr[r][e], d);
      const float score = warp_sum(d) * scale;  // every lane shuffles, masked or not
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
      const float p = __expf(s[r] - m_new);  // masked key: exp(-inf) = 0
      l += p;
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[e] = fmaf(p, vr[r][e], acc[e]);
    }
    m = m_new;
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
  float* mine = partial + (static_cast<size_t>(h) * kDecodeSplits + split) * (DH + 2);
  if (d < DH) {
    float bm = kNegInf;
    for (int w = 0; w < kDecodeWarps; ++w) bm = fmaxf(bm, s_m[w]);
    float bl = 0.f, bo = 0.f;
    for (int w = 0; w < kDecodeWarps; ++w) {
      if (s_l[w] == 0.f) continue;  // a warp that saw no key (and an empty split: all of them)
      const float c = __expf(s_m[w] - bm);
      bl += s_l[w] * c;
      bo += s_o[w][d] * c;
    }
    mine[d] = bo;
    if (d == 0) {
      mine[DH] = bm;
      mine[DH + 1] = bl;
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = arrive_last(counters + h, 1, nsplits);
  __syncthreads();
  if (!s_last || d >= DH) return;

  // Merge the splits, kMergeBatch at a time: every load of a batch is issued before any is used,
  // so a short context (nsplits <= 8) costs one round trip to L2, not one per split.
  constexpr int kMergeBatch = 8;
  const float* p = partial + static_cast<size_t>(h) * kDecodeSplits * (DH + 2);
  float gm = kNegInf, gl = 0.f, go = 0.f;
  for (int s0 = 0; s0 < nsplits; s0 += kMergeBatch) {
    float ms[kMergeBatch], ls[kMergeBatch], os[kMergeBatch];
#pragma unroll
    for (int i = 0; i < kMergeBatch; ++i) {
      ms[i] = kNegInf, ls[i] = 0.f, os[i] = 0.f;
      if (s0 + i < nsplits) {
        const float* ps = p + (s0 + i) * (DH + 2);
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
  out[static_cast<size_t>(h) * DH + d] = __float2bfloat16(go / gl);
}

}  // namespace lg::qwen::dev
