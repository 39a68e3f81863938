// A lane that runs another and counts what the scheduler asks of it: the tokens fed, and the
// sequences of its steps that want a logits row, a draw on the lane, or only the argmax. For tests
// of the prefix cache (tokens computed) and of the sampler's fast paths (logits rows asked for).
// It draws on the lane only when made with forward_draws and the inner lane does (Lane::draws);
// otherwise the scheduler draws sampled tokens on the host from logits rows.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/lane.h"

namespace lg::testing {

class CountingLane : public Lane {
 public:
  explicit CountingLane(Lane& inner, bool forward_draws = false) : inner_(inner), forward_draws_(forward_draws) {}
  bool draws() const override { return forward_draws_ && inner_.draws(); }
  std::string name() const override { return inner_.name(); }
  Provenance provenance() const override { return inner_.provenance(); }
  const LaneLimits& limits() const override { return inner_.limits(); }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    for (const SeqStep& s : batch) {
      fed += static_cast<int64_t>(s.tokens.size());
      ++(s.want_logits ? with_logits : s.draw ? with_draw : argmax_only);
    }
    return inner_.step(batch);
  }
  int64_t fed = 0;          ///< tokens of every step's sequences
  int64_t with_logits = 0;  ///< sequences that asked for their logits row
  int64_t with_draw = 0;    ///< sequences that asked the lane to draw their token
  int64_t argmax_only = 0;  ///< sequences that asked for the argmax only

 private:
  Lane& inner_;
  bool forward_draws_ = false;
};

}  // namespace lg::testing
