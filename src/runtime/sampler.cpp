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
  // The seen tokens' edits, each biased or held where the request says, then the biased and held
  // tokens not seen (ids sorted at construction: a binary search each).
  edits_.assign(seen.begin(), seen.end());
  met_.assign(bias.size() + held.size(), 0);
  const auto bias_at = [&](int32_t id) {
    const auto it = std::lower_bound(bias.begin(), bias.end(), std::pair<int32_t, float>(id, -INFINITY));
    return it != bias.end() && it->first == id ? static_cast<size_t>(it - bias.begin()) : bias.size();
  };
  const auto held_at = [&](int32_t id) {
    const auto it = std::lower_bound(held.begin(), held.end(), id);
    return hold && it != held.end() && *it == id ? static_cast<size_t>(it - held.begin()) : held.size();
  };
  const auto mark = [&](LogitEdit& e) {
    if (const size_t b = bias_at(e.id); b < bias.size()) {
      e.bias = bias[b].second;
      met_[b] = 1;
    }
    if (const size_t h = held_at(e.id); h < held.size()) {
      e.bias = LogitEdit::kHeld;
      met_[bias.size() + h] = 1;
    }
  };
  for (LogitEdit& e : edits_) mark(e);
  for (size_t b = 0; b < bias.size(); ++b) {
    if (met_[b]) continue;
    LogitEdit e{bias[b].first, LogitEdit::kUnseen, 0};
    mark(e);
    edits_.push_back(e);
  }
  for (size_t h = 0; hold && h < held.size(); ++h)
    if (!met_[bias.size() + h]) edits_.push_back({held[h], LogitEdit::kUnseen, LogitEdit::kHeld});
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
