// What the attention launchers share (attention_launch.cu: one sequence and the ragged prefill;
// attention_batch_launch.cu: the batched decode step): argument checks, the decode kernels'
// common parameters and block shape, and v8's instances. Internal to the hand-written lane.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/attention_decode.cuh"
#include "lanes/qwen/kernels/attention_decode_long.cuh"
#include "lanes/qwen/launch_pdl.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "support/error.h"

namespace lg::qwen::attn_launch {

inline void check_head_dim(int Dh) {
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)
    throw Error("hand-written attention: head_dim " + std::to_string(Dh) + " is not one of 16, 32, 64, 128");
}

inline void check_gqa(int H, int KV) {
  if (H <= 0 || KV <= 0 || H % KV != 0)
    throw Error("hand-written attention: H=" + std::to_string(H) + " is not a positive multiple of KV=" +
                std::to_string(KV));
}

/// log2 of the pool's block size; throws unless the pages are complete and the block size a power of two.
inline int page_shift(const KvPages& c) {
  if (!c.k || !c.v || c.rows <= 0) throw Error("hand-written attention: KV pool without memory or rows");
  if (c.block_size <= 0 || (c.block_size & (c.block_size - 1)) != 0 || c.rows % c.block_size != 0)
    throw Error("hand-written attention: KV block size " + std::to_string(c.block_size) +
                " is not a power of two dividing the pool's " + std::to_string(c.rows) + " rows");
  int shift = 0;
  while ((1 << shift) < c.block_size) ++shift;
  return shift;
}

/// The decode attention's block shape (attention_decode.cuh): warps per block and the shortest
/// chunk of positions a block takes; knobs LG_QWEN_ATTN_WARPS (4, 8, 16) and LG_QWEN_ATTN_SPLIT.
/// Measured on the H200 (bench/qwen_lane.md, v4): 8 warps and 128 keys, one block per head up to
/// 128 positions, tie 16 warps at the bench's 33..97 positions and beat them at 2000 (13.3 against
/// 17.6 us at 8B); v3's 4 warps and 32 keys (2-4 merged splits there) are 0.04 ms/token slower at 0.6B.
/// early: the single-sequence ROPE form locates its keys (and with LG_QWEN_PREFETCH_ITERS > 0
/// prefetches them) before the PDL wait (v7, attention_decode.cuh's EARLY); LG_QWEN_ATTN_EARLY=0
/// runs v5's order for A/B.
/// bound: the 8-warp kernel's registers are bounded for this many blocks per SM (knob
/// LG_QWEN_ATTN_BOUND): 3 (80 registers, no spills; v7) or 4 (64, v5's). H200, session 9 calls
/// 2-4: 3 is 0.1-1.2% quicker a step at 8B up to 1,024 positions and 4-6% at 0.6B from 512 to
/// 8,192; 4 is 2-3% quicker at 8B from 2,048 to 8,192 (past 4,096 v8 takes those steps).
struct DecodeAttnShape {
  int warps, min_split;
  bool early;
  int bound;
};

inline DecodeAttnShape decode_attn_shape() {
  static const DecodeAttnShape sh{lab_knob("LG_QWEN_ATTN_WARPS", 8), std::max(1, lab_knob("LG_QWEN_ATTN_SPLIT", 128)),
                                  lab_knob("LG_QWEN_ATTN_EARLY", 1) != 0, lab_knob("LG_QWEN_ATTN_BOUND", 3) == 4 ? 4 : 3};
  return sh;
}

/// Enough splits that a chunk of min_split positions covers max_seq (the longest sequence), at
/// most kDecodeSplits: blocks that can never have keys are not launched.
inline int decode_attn_splits(int max_seq, int min_split) {
  return std::max(1, std::min(dev::kDecodeSplits, (max_seq + min_split - 1) / min_split));
}

/// Blocks of `kernel` (`threads` a block, no dynamic shared memory) resident on the device at once.
template <typename Kernel>
inline int resident_blocks(Kernel kernel, int threads) {
  int per_sm = 0;
  LG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return std::max(1, per_sm) * cuda::sm_count();
}

// The fields both decode-attention forms share.
inline dev::DecodeAttnParams decode_attention_params(const float* q, const KvPages& c, const int* block_table, int H,
                                                     int KV, int Dh, float* scratch, int* counters, bf16* out) {
  dev::DecodeAttnParams p{};
  p.q_all = q;
  p.k_cache = c.k;
  p.v_cache = c.v;
  p.block_table = block_table;
  p.H = H;
  p.KV = KV;
  p.rows = c.rows;
  p.block_shift = page_shift(c);
  p.scale = 1.f / sqrtf(static_cast<float>(Dh));
  p.partial = scratch;
  p.counters = counters;
  p.out = out;
  // LG_QWEN_PREFETCH_ITERS (lab): a warp's iterations prefetch_split sends to L2 before the PDL
  // wait (a large value: the whole split).
  static const int prefetch_iters = std::max(0, lab_knob("LG_QWEN_PREFETCH_ITERS", dev::kDecodePrefetchIters));
  p.prefetch_iters = prefetch_iters;
  return p;
}

// The ROPE form's fields (the K/V write, bias, qk-norm, RoPE) from the lane's arguments.
inline void set_rope_fields(dev::DecodeAttnParams& p, const QkvRopeArgs& r, float eps) {
  p.k_store = r.cache.k;
  p.v_store = r.cache.v;
  p.bias = r.bias;
  p.q_norm = r.q_norm;
  p.k_norm = r.k_norm;
  p.inv_freq = r.inv_freq;
  p.eps = eps;
}

/// v8's instance (attn_decode_long_kernel) for head_dim DH, a group of G, QG query heads a block.
template <int DH, int G, int QG, bool BATCH>
struct LongKernel {
  static constexpr int kWarps = 8, kParts = G / QG;  // blocks of a KV head in a split
  static constexpr auto kernel = dev::attn_decode_long_kernel<DH, G, QG, kWarps, BATCH>;
  /// Blocks of it resident on the device at once.
  static int resident() {
    static const int n = resident_blocks(kernel, kWarps * 32);
    return n;
  }
};

/// f(LongKernel<...>{}) for a shape attention_decode_long_supports takes, with `heads` (2 or 4)
/// query heads a block where the group is 4 and head_dim 128, else 2.
template <bool BATCH, typename F>
inline void with_long_kernel(int G, int Dh, int heads, F&& f) {
  if (Dh == 64) return G == 2 ? f(LongKernel<64, 2, 2, BATCH>{}) : f(LongKernel<64, 4, 2, BATCH>{});
  if (G == 4 && heads == 4) return f(LongKernel<128, 4, 4, BATCH>{});
  return G == 2 ? f(LongKernel<128, 2, 2, BATCH>{}) : f(LongKernel<128, 4, 2, BATCH>{});
}

}  // namespace lg::qwen::attn_launch
