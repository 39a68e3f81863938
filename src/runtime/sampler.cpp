#include "runtime/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "runtime/draw.h"
#include "support/error.h"

namespace lg::runtime {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw Error("argmax of empty logits");
  size_t best = 0;
  for (size_t k = 1; k < logits.size(); ++k)
    if (logits[k] > logits[best]) best = k;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  if (!(options.temperature >= 0)) throw Error(fmt::format("temperature must be >= 0, got {}", options.temperature));
  if (options.top_k < 0) throw Error(fmt::format("top_k must be >= 0, got {}", options.top_k));
  if (!(options.top_p > 0 && options.top_p <= 1)) throw Error(fmt::format("top_p must be in (0, 1], got {}", options.top_p));
  if (!(options.min_p >= 0 && options.min_p <= 1)) throw Error(fmt::format("min_p must be in [0, 1], got {}", options.min_p));
  check_penalties(options.penalties);
  auto& bias = options_.logit_bias;
  std::sort(bias.begin(), bias.end());
  for (size_t i = 0; i < bias.size(); ++i) {
    const auto [id, b] = bias[i];
    if (id < 0) throw Error(fmt::format("logit_bias: token id {} is negative", id));
    if (i > 0 && bias[i - 1].first == id) throw Error(fmt::format("logit_bias: token id {} is given twice", id));
    if (!(b >= -100 && b <= 100)) throw Error(fmt::format("logit_bias: token {}'s bias {} is outside [-100, 100]", id, b));
  }
  if (options.min_tokens < 0) throw Error(fmt::format("min_tokens must be >= 0, got {}", options.min_tokens));
  auto& held = options_.min_tokens_held;
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  if (!held.empty() && held.front() < 0) throw Error(fmt::format("min_tokens: token id {} is negative", held.front()));
}

int32_t Sampler::pick(std::span<const float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const std::span<const LogitEdit> edits = logit_edits(prompt, output);
  if (!edits.empty()) {
    edited_.assign(logits.begin(), logits.end());
    apply_logit_edits(edited_, penalty(), edits);
    logits = edited_;
  }
  if (greedy()) return argmax(logits);
  return draw_token(logits, next_draw());
}

std::span<const LogitEdit> Sampler::logit_edits(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const auto& bias = options_.logit_bias;
  const auto& held = options_.min_tokens_held;
  const bool hold = static_cast<int64_t>(output.size()) < options_.min_tokens && !held.empty();
  std::span<const LogitEdit> seen;
  if (options_.penalties.active()) seen = history_.edits(prompt, output, options_.penalties);
  if (bias.empty() && !hold) return seen;
  // The biased and held ids, sorted, merged once per hold state (a whole-vocabulary bias is 150k
  // of them: re-merged every step they cost the step ~18 ms of host time, bench/RESULTS.md).
  if (fixed_hold_ != static_cast<int>(hold)) {
    edits_.clear();
    size_t i = 0, j = 0;
    while (i < bias.size() || (hold && j < held.size())) {
      const int32_t bid = i < bias.size() ? bias[i].first : INT32_MAX;
      const int32_t hid = hold && j < held.size() ? held[j] : INT32_MAX;
      const int32_t id = std::min(bid, hid);
      LogitEdit e{id, LogitEdit::kUnseen, id == hid ? LogitEdit::kHeld : bias[i].second};
      i += id == bid;
      j += id == hid;
      edits_.push_back(e);
    }
    fixed_n_ = edits_.size();
    fixed_hold_ = static_cast<int>(hold);
    touched_.clear();
  }
  // Then the seen ids: a biased or held one takes its count in place, the others follow. The
  // history can restart (another prompt), so last step's counts are undone first, not kept.
  for (size_t k : touched_) edits_[k].count = LogitEdit::kUnseen;
  touched_.clear();
  edits_.resize(fixed_n_);
  edits_.reserve(fixed_n_ + seen.size());  // no reallocation below: the iterators stay valid
  const auto fixed_end = edits_.begin() + static_cast<std::ptrdiff_t>(fixed_n_);
  for (const LogitEdit& e : seen) {
    const auto it = std::lower_bound(edits_.begin(), fixed_end, e.id,
                                     [](const LogitEdit& f, int32_t id) { return f.id < id; });
    if (it != fixed_end && it->id == e.id) {
      it->count = e.count;
      touched_.push_back(static_cast<size_t>(it - edits_.begin()));
    } else {
      edits_.push_back(e);
    }
  }
  return edits_;
}

DrawParams Sampler::next_draw() {
  DrawParams d;
  if (greedy()) {
    d.top_k = 1;
    return d;
  }
  // 1 / T in double, then to float: a T so small its inverse overflows gives inf, the greedy limit.
  d.inv_temperature = static_cast<float>(1.0 / options_.temperature);
  // A T past float's range (1 / T rounds to 0) is the uniform limit: the least positive inverse.
  if (d.inv_temperature == 0) d.inv_temperature = std::numeric_limits<float>::denorm_min();
  d.top_k = static_cast<int32_t>(std::min<int64_t>(options_.top_k, INT32_MAX));
  d.min_p = static_cast<float>(options_.min_p);
  d.top_p = options_.top_p;
  d.key = rng_();  // the race's key: each token's uniform is drawn from it (draw::race_uniform)
  return d;
}

}  // namespace lg::runtime
