// The hand-written Qwen lane ("handwritten"): CUDA kernels written by hand for the Qwen2/2.5 and
// Qwen3 dense family (kernels/*.cuh) and the launch sequence below, instantiated from the model's
// config. Not compiled from models/qwen*.lg: golden-token locks hold it to that forward.
//
// A step is a ragged batch of sequences (runtime/step.h) over one paged bf16 KV pool per lane
// (docs/handwritten_lane.md). Two paths:
// - One decode token (one sequence, one token): 5 launches per layer, the whole step captured in
//   one CUDA graph (token and position read on the device from mapped pinned host memory, the
//   argmax written into it, the sequence's block table in device memory the host refreshes only
//   when it changed; so one graph serves every position and a step makes no copy), each launch
//   with Programmatic Dependent Launch so its weight loads overlap the previous kernel's tail:
//     1 RMSNorm + fused QKV GEMV (raw projection)              3 o_proj GEMV + residual add
//     2 bias/qk-norm/RoPE/KV write + split-KV attention, the   4 RMSNorm + gate/up GEMV + SwiGLU
//       splits merged by the last block                        5 down_proj GEMV + residual add
//   then the embedding gather first and, last, final RMSNorm + LM-head GEMV with a fused argmax.
// - Several sequences with one decode token each: the same launches as the rows path below with
//   the batched decode attention (v5: bias/qk-norm/RoPE/KV write fused, split-KV per sequence)
//   in place of RoPE + ragged attention, captured as one CUDA graph per batch-size bucket (2, 4,
//   8, ... max_batch; pad rows of token 0 at position 0 write only the pool's extra block) and
//   per split count (from the longest sequence, rounded up to a power of two).
// - Everything else (prefill chunks, mixed steps) over the step's T token
//   rows: RMSNorm rows, cuBLASLt bf16 GEMMs (residual adds as beta = 1 into the fp32 residual
//   stream), RoPE + K/V write at each token's position and pool row, attention (one sequence: the
//   tensor-core flash kernel; several: the ragged paged kernel), SwiGLU; then the LM head on each
//   sequence's last row only (one sequence: the GEMV with its argmax; several: the rows gathered
//   and normed, a cuBLASLt GEMM [B, V] and an argmax per row).
// Numerics: bf16 weights and KV cache, bf16 GEMM/GEMV inputs, fp32 accumulation, fp32 residual
// stream, norms, softmax and RoPE.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lanes/qwen/qwen_shape.h"
#include "runtime/lane.h"
#include "runtime/step.h"

namespace lg::model {
struct ModelDir;
struct ModelConfig;
}

namespace lg::qwen {

class WeightSource;
struct BatchAttnPlan;

/// The lane. Construct on a machine with a CUDA device (else lg::Error).
class HandwrittenQwenLane : public Lane {
 public:
  /// Uploads the weights from `weights` (HF tensor names), then sizes the step buffers and the KV
  /// pool from `options` (runtime/step.h; options.max_seq must be set, 1 .. 2^20): activations
  /// for max_tokens rows, logits for max_batch rows, and a pool of options.kv_tokens positions,
  /// or by default 90% of the device memory still free, capped at max_batch * max_seq positions
  /// (vLLM's gpu_memory_utilization, applied to what is free). Throws lg::Error for an
  /// unsupported shape, a missing or mis-shaped tensor, no device, a block size that is not a
  /// power of two, or a pool or buffers that do not fit in device memory.
  HandwrittenQwenLane(const QwenShape& shape, WeightSource& weights, const LaneOptions& options);
  ~HandwrittenQwenLane() override;

  std::string name() const override { return "handwritten"; }
  Provenance provenance() const override;
  const LaneLimits& limits() const override { return limits_; }
  /// Sampled and penalised picks run on the device (runtime/cuda/row_draws.h): the logits rows
  /// stay there.
  bool draws() const override { return true; }
  LaneFacts facts() const override;
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override;

  const QwenShape& shape() const { return shape_; }

 private:
  struct State;
  void run_decode(const SeqStep& s);
  void enqueue_head_gemv(const float* x_row);
  void run_decode_batch(const FlatBatch& f, std::span<const SeqStep> batch);
  /// Copies a batched decode step's tokens, positions and block tables (padded to Bp rows) into
  /// its graphs' fixed buffers; returns the longest sequence's length with this token.
  int stage_decode_batch(const FlatBatch& f, std::span<const SeqStep> batch, int Bp);
  /// Enqueues the launches of a batched decode step of Bp sequences under attention plan attn;
  /// mark(name) after each launch (LG_PROFILE_LAUNCHES).
  void enqueue_decode_batch(int Bp, const BatchAttnPlan& attn, const std::function<void(const char*)>& mark);
  /// Layer l of a batched decode graph on cuBLASLt (not use_gemv_rows); x_slices and the return as
  /// enqueue_layer_rows's, the split-K slices in dec_parts.
  int enqueue_layer_lt(size_t l, int Bp, int table_stride, const BatchAttnPlan& attn, const int* d_pos,
                       const std::function<void(const char*)>& mark, int x_slices);
  /// Layer l of a batched decode graph of Bp <= gemv_rows_max_t sequences on the row GEMVs (use_gemv_rows);
  /// mark(name) after each launch (LG_PROFILE_LAUNCHES). x_slices: the K-split slices of the layer
  /// before's down projection its first RMSNorm adds into x (0 at layer 0); returns this layer's.
  int enqueue_layer_rows(size_t l, int Bp, int table_stride, const BatchAttnPlan& attn, const int* d_pos,
                         const std::function<void(const char*)>& mark, int x_slices);
  /// A batched decode graph's RMSNorm of x into h (Bp rows, weight w), adding the nparts split-K
  /// slices of the projection before (parts f32 [nparts, Bp, hidden]) into x first; nparts 0: that
  /// projection added into x itself.
  void enqueue_rmsnorm(int Bp, const float* w, const float* parts, int nparts);
  void run_rows(const FlatBatch& f, std::span<const SeqStep> batch);
  QwenShape shape_;
  LaneLimits limits_;
  std::unique_ptr<State> st_;
};

/// The lane for a model directory (config.json + safetensors); options.max_seq 0 means the
/// config's max_position_embeddings. Throws lg::Error when the config is outside the templates
/// (the message says so and names the config) or without a CUDA device.
std::unique_ptr<Lane> make_handwritten_lane(const model::ModelDir& dir, const LaneOptions& options);

/// The lane for the model `config` describes with RandomWeights(seed) (`lg bench` at a real shape);
/// options.max_seq 0: the config's max_position_embeddings. Same errors, less the checkpoint's.
std::unique_ptr<Lane> make_handwritten_lane_random(const model::ModelConfig& config, uint64_t seed,
                                                  const LaneOptions& options);

}  // namespace lg::qwen
