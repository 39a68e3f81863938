// A lane is one way to execute a model: the CPU reference executor of the .lg program ("cpu"),
// the CUDA program compiled from it ("compiled"), or a hand-written CUDA lane ("handwritten").
// The generation loop, `lg run`, `lg bench` and `lg lock check` drive every lane through this
// interface, so they cannot tell lanes apart except by what they compute and how fast.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lanes/provenance.h"

namespace lg {

/// What a step returns. Logits are those of the step's last token.
struct StepResult {
  std::vector<float> logits;  ///< f32[V] when asked for, else empty
  int32_t argmax = -1;        ///< greedy token of the last position (lowest id wins a tie)
};

/// One sequence's execution of a model (batch 1). Holds the KV cache between steps.
class Lane {
 public:
  virtual ~Lane() = default;
  /// "cpu", "compiled", "handwritten".
  virtual std::string name() const = 0;
  virtual Provenance provenance() const = 0;
  /// Capacity of the KV cache in tokens (positions 0 .. max_seq()-1).
  virtual int64_t max_seq() const = 0;
  /// Runs the forward over `tokens` at positions start_pos, start_pos+1, ...: a prefill when
  /// tokens.size() > 1, a decode step when 1. Writes their K/V into the cache. Throws lg::Error if
  /// start_pos + tokens.size() > max_seq() or tokens is empty.
  virtual StepResult step(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) = 0;
  /// Forgets the sequence (the cache is overwritten from position 0 by the next step).
  virtual void reset() = 0;
};

}  // namespace lg
