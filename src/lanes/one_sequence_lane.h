// Interim, until the GPU lanes page their KV cache: a lane whose cache is one sequence's
// contiguous rows serves steps of one sequence (limits().max_batch == 1). Positions index its
// cache directly; the block table is checked but not needed, since the scheduler runs one
// sequence at a time and every sequence starts at position 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/lane.h"
#include "support/error.h"

namespace lg {

class OneSequenceLane : public Lane {
 public:
  const LaneLimits& limits() const override { return limits_; }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    flatten(batch, limits_);  // checks positions, the batch size (1) and the block table
    const SeqStep& s = batch[0];
    return {step_one(s.tokens, s.start_pos, s.want_logits)};
  }

 protected:
  /// The KV pool is the one sequence's cache: max_seq positions.
  explicit OneSequenceLane(int64_t max_seq) {
    LaneOptions o;
    o.max_batch = 1;
    o.kv_tokens = max_seq;
    limits_ = resolve_limits(o, max_seq, max_seq);
  }
  /// Runs tokens at positions start_pos, start_pos+1, ... of the sequence.
  virtual SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) = 0;

 private:
  LaneLimits limits_;
};

}  // namespace lg
