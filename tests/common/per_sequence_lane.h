// A base for scripted test lanes whose answer for a sequence depends only on its own tokens and
// positions: a step's sequences are answered one by one by step_one, after the batch passes
// flatten()'s checks against the limits, so such a lane runs in batches like a real one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/lane.h"

namespace lg::testing {

class PerSequenceLane : public Lane {
 public:
  explicit PerSequenceLane(int64_t max_seq, int64_t kv_tokens = 0, int64_t max_batch = 0) {
    LaneOptions o;
    o.kv_tokens = kv_tokens;
    o.max_batch = max_batch;
    limits_ = resolve_limits(o, max_seq, max_seq);
  }
  const LaneLimits& limits() const override { return limits_; }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    flatten(batch, limits_);
    std::vector<SeqResult> out;
    for (const SeqStep& s : batch) out.push_back(step_one(s.tokens, s.start_pos, s.want_logits));
    return out;
  }
  virtual SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) = 0;

 protected:
  LaneLimits limits_;
};

}  // namespace lg::testing
