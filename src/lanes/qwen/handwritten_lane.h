// The hand-written Qwen lane ("handwritten"): CUDA kernels written by hand for the Qwen2/2.5 and
// Qwen3 dense family (kernels/*.cuh) and the launch sequence below, instantiated from the model's
// config. Not compiled from models/qwen*.lg: golden-token locks hold it to that forward.
//
// Decode (one token), 5 launches per layer, the whole step captured in one CUDA graph (token and
// position are read on the device from mapped pinned host memory, and the argmax written into it,
// so one graph serves every position and a step makes no copy), each launch with
// Programmatic Dependent Launch so its weight loads overlap the previous kernel's tail:
//   1 RMSNorm + fused QKV GEMV (raw projection)               3 o_proj GEMV + residual add
//   2 bias/qk-norm/RoPE/KV write + split-KV attention, the    4 RMSNorm + gate/up GEMV + SwiGLU
//     splits merged by the last block                         5 down_proj GEMV + residual add
// then the embedding gather first and, last, final RMSNorm + LM-head GEMV with a fused argmax.
// Prefill (T tokens, in chunks of at most 2048): RMSNorm rows, cuBLASLt bf16 GEMMs (residual
// adds as beta = 1 into the fp32 residual stream), the same RoPE/KV kernel, a causal prefill
// attention kernel, SwiGLU; the LM head runs on the last row only.
// Numerics: bf16 weights and KV cache, bf16 GEMM/GEMV inputs, fp32 accumulation, fp32 residual
// stream, norms, softmax and RoPE.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lanes/one_sequence_lane.h"
#include "lanes/qwen/qwen_shape.h"

namespace lg::model {
struct ModelDir;
}

namespace lg::qwen {

class WeightSource;

/// The lane. Construct on a machine with a CUDA device (else lg::Error).
class HandwrittenQwenLane : public OneSequenceLane {
 public:
  /// Uploads the weights from `weights` (HF tensor names) and allocates a KV cache of `max_seq`
  /// positions. Throws lg::Error for an unsupported shape, a missing or mis-shaped tensor, no
  /// device, or too little device memory.
  HandwrittenQwenLane(const QwenShape& shape, WeightSource& weights, int64_t max_seq);
  ~HandwrittenQwenLane() override;

  std::string name() const override { return "handwritten"; }
  Provenance provenance() const override;
  SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override;

  const QwenShape& shape() const { return shape_; }

 private:
  struct State;
  QwenShape shape_;
  int64_t max_seq_;
  std::unique_ptr<State> st_;
};

/// The lane for a model directory (config.json + safetensors); max_seq 0 means the config's
/// max_position_embeddings. Throws lg::Error when the config
/// is outside the templates (the message says so and names the config) or without a CUDA device.
std::unique_ptr<Lane> make_handwritten_lane(const model::ModelDir& dir, int64_t max_seq);

}  // namespace lg::qwen
