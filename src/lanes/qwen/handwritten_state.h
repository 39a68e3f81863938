// The hand-written lane's device state and the helpers its step paths share (handwritten_lane.cpp:
// construction, the single-sequence decode graph and the rows path; decode_batch.cpp: the batched
// decode graphs). Private to src/lanes/qwen.
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <utility>
#include <vector>

#include "lanes/qwen/handwritten_lane.h"
#include "lanes/qwen/kernels.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm_lt.h"
#include "runtime/cuda/row_draws.h"
#include "runtime/cuda/step_times.h"

namespace lg::qwen {

/// Pinned host ints. Mapped (`mapped`): also in the device's address space at `dev`, so a kernel
/// reads or writes them without a copy (the decode graph's token and position, the argmaxes).
/// Not mapped: staging for one cudaMemcpyAsync (pinned, so the copy is a real async DMA).
struct PinnedInts {
  int* p = nullptr;
  int* dev = nullptr;
  PinnedInts() = default;
  void allocate(size_t n, bool mapped) {
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(int),
                                mapped ? cudaHostAllocMapped : cudaHostAllocDefault));
    if (mapped) LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0));
  }
  ~PinnedInts() {
    if (p) cudaFreeHost(p);
  }
  PinnedInts(const PinnedInts&) = delete;
  PinnedInts& operator=(const PinnedInts&) = delete;
};

/// Position from which a single sequence's decode step takes the long-context graph (the
/// attention by KV head, launch_attention_decode_rope_long) for G = H / KV query heads per KV
/// head: 16,384 / G. What v8 saves grows with G (v7 reads the K/V rows G times) and its fewer
/// blocks cost a short context: measured on the H200 (bench/RESULTS.md, ninth session, call 10),
/// v8 is quicker from 4,096 positions at 8B (G = 4); at 0.6B (G = 2) it is slower at 4,096, ties
/// at 8,192 and is quicker at 32,768.
/// LG_QWEN_LONG_DECODE_FROM overrides it.
constexpr int64_t long_decode_from(int64_t G) { return G > 0 ? 16384 / G : INT64_MAX; }

/// The layer-independent arguments of every launch, in ints as the kernels take them.
struct Dims {
  int V, D, F, H, KV, Dh, nq, nqkv, max_seq, bs;
  float eps;
};

struct HandwrittenQwenLane::State {
  struct Layer {
    cuda::DeviceBuffer wqkv, wo, wgu, wd;       // bf16
    cuda::DeviceBuffer ln1, ln2, qn, kn, bqkv;  // f32
  };
  cuda::Stream stream;
  cuda::LtGemm gemm;
  std::vector<Layer> layers;
  cuda::DeviceBuffer embed, head, final_norm, inv_freq;
  // The KV pool: bf16 [L, KV, rows, Dh] each (kernels.h: KvPages).
  cuda::DeviceBuffer kpool, vpool;
  int rows = 0;
  // Activations for max_tokens rows; logits for max_batch rows.
  cuda::DeviceBuffer x, h, qkv, q, attn, gu, act, logits, attn_scratch;
  // Zero-filled once; the kernels that count in them (the decode attention's per-head split
  // counters, the LM head GEMV's argmax hand-off) leave them at zero after every launch.
  cuda::DeviceBuffer attn_counters, gemv_sync;
  // The rows path's inputs, one upload per step from pinned staging:
  // [tokens T | pos T | seq T | slot T | rows B | block table B x W].
  cuda::DeviceBuffer d_step;
  PinnedInts h_step;
  // The decode graph's: token and position in mapped host memory (the embedding kernel copies the
  // position to d_pos for the later kernels), the sequence's block table in d_table, which holds
  // table_on_device (refreshed from h_table only when the step's table differs).
  PinnedInts h_token, h_pos, h_table;
  cuda::DeviceBuffer d_pos, d_table;
  std::vector<int32_t> table_on_device;
  // The batched decode graphs' (steps of 2+ sequences with one decode token each, padded to a
  // bucket; run_decode_batch): [tokens Bp | pos Bp] in d_dec, the block tables [Bp, blocks_per_seq]
  // in d_dec_table (each step copies only the width it uses), staged in h_dec / h_dec_table; the
  // attention's partials and split counters for max_batch sequences; one graph per (bucket, splits).
  cuda::DeviceBuffer d_dec, d_dec_table, dec_scratch, dec_counters;
  // The split-K slices of the batched decode's o_proj and down (decode_gemm_slices), f32
  // [4, max_batch, hidden]: o_proj's are summed by the RMSNorm after it before down writes its own.
  cuda::DeviceBuffer dec_parts;
  // The row GEMVs' K-split partials and per-tile arrival counters (GemvRowsArgs::partials), for the
  // largest residual projection (q/k/v or hidden) at the most rows a graph gives them; only
  // where some bucket takes the row GEMVs (gemv_rows_batch_limit). The counters are zero-filled
  // once and left at zero by every launch.
  cuda::DeviceBuffer rows_partials, rows_arrivals;
  PinnedInts h_dec, h_dec_table;
  /// Batched decode graphs by (batch bucket, attention plan: its kernel and splits).
  std::map<std::pair<int, BatchAttnPlan>, cuda::GraphExec> batch_graphs;
  int trash_block = 0;  ///< the pool's extra block, past the runtime's num_blocks: pad rows' K/V
  // Each sequence's argmax, written by the LM head straight into mapped host memory.
  PinnedInts h_argmax;
  std::optional<cuda::RowDraws> draws;  ///< sampled sequences' draws from their logits rows
  cuda::GraphExec decode_graph;       // one sequence's decode step, below long_decode_from(H / KV)
  cuda::GraphExec decode_graph_long;  // the same from there on, with the by-KV-head attention (v8)
  /// Counted in the decode graph while it is captured (LaneFacts).
  std::optional<int64_t> decode_launches_per_layer;
  cuda::StepTimes times{"handwritten lane"};  // LG_STEP_TIMES=1

  const __nv_bfloat16* head_w() const { return head.data() ? head.as<__nv_bfloat16>() : embed.as<__nv_bfloat16>(); }

  /// Uploads every weight of `sh` from `w`.
  void load_weights(const QwenShape& sh, WeightSource& w);
  /// Activations for sizes.max_tokens rows, logits and argmaxes for sizes.max_batch, staging.
  void allocate_step_buffers(const QwenShape& sh, const LaneLimits& sizes);
  /// The KV pools, zero-filled: `pool_rows` positions of every layer and KV head.
  void allocate_pool(size_t pool_bytes, int pool_rows);
  /// Layer l's arguments of the decode attention's fused bias/qk-norm/RoPE/KV write, reading the
  /// block tables at `table`.
  QkvRopeArgs rope_args(const Dims& d, size_t l, const int* table) const;
  /// The cuBLASLt gate/up GEMM of T rows of h (layer l) into gu, and the SwiGLU of gu into act: the
  /// product in bf16 or f32 as gate_up_in_bf16() says, the same form for both halves.
  void gate_up(const Dims& d, size_t l, int T);
  void swiglu(const Dims& d, int T);
};

/// The launch arguments of `sh` under the lane's limits.
inline Dims dims_of(const QwenShape& sh, const LaneLimits& lim) {
  return Dims{static_cast<int>(sh.vocab), static_cast<int>(sh.hidden), static_cast<int>(sh.intermediate),
              static_cast<int>(sh.heads), static_cast<int>(sh.kv_heads), static_cast<int>(sh.head_dim),
              static_cast<int>(sh.heads * sh.head_dim), static_cast<int>((sh.heads + 2 * sh.kv_heads) * sh.head_dim),
              static_cast<int>(lim.max_seq), static_cast<int>(lim.block_size), static_cast<float>(sh.eps)};
}

/// Layer l's pages of the pools.
inline KvPages pages_of(const cuda::DeviceBuffer& kpool, const cuda::DeviceBuffer& vpool, int rows, const Dims& d, size_t l) {
  const size_t layer = static_cast<size_t>(d.KV) * static_cast<size_t>(rows) * static_cast<size_t>(d.Dh);
  KvPages p;
  p.k = kpool.as<__nv_bfloat16>() + l * layer;
  p.v = vpool.as<__nv_bfloat16>() + l * layer;
  p.rows = rows;
  p.block_size = d.bs;
  return p;
}

/// Runs `enqueue` captured into `graph` on `s`; a throw ends the capture and discards it.
template <class F>
void capture(cuda::GraphExec& graph, cudaStream_t s, F&& enqueue) {
  graph.begin_capture(s);
  try {
    enqueue();
  } catch (...) {
    graph.abandon_capture(s);
    throw;
  }
  graph.end_capture(s);
}

}  // namespace lg::qwen
