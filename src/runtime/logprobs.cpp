#include "runtime/logprobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "support/error.h"

namespace lg::runtime {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top) {
  const auto v = static_cast<int64_t>(logits.size());
  if (chosen < 0 || chosen >= v)
    throw Error(fmt::format("logprobs: token {} is outside the vocabulary of {}", chosen, v));
  if (top < 0 || top > kMaxTopLogprobs)
    throw Error(fmt::format("logprobs: {} alternatives asked, at most {}", top, kMaxTopLogprobs));
  // The largest logit first, so that every exp is at most 1 (no overflow) and the sum at least 1.
  const float m = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - m);
  const double log_z = static_cast<double>(m) + std::log(sum);
  auto logprob = [&](int32_t id) {
    // At most 0: a rounding of log_z below the largest logit would make the likeliest token's > 0.
    return static_cast<float>(std::min(0.0, static_cast<double>(logits[static_cast<size_t>(id)]) - log_z));
  };
  TokenLogprobs out;
  out.chosen = {chosen, logprob(chosen)};
  if (top == 0) return out;
  // The `top` largest by a bounded insertion: V reads, and at most `top` moves each (top <= 20).
  std::vector<int32_t> best;
  best.reserve(static_cast<size_t>(top) + 1);
  auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(v); ++i) {
    if (static_cast<int32_t>(best.size()) == top && !before(i, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), i, before), i);
    if (static_cast<int32_t>(best.size()) > top) best.pop_back();
  }
  out.top.reserve(best.size());
  for (const int32_t id : best) out.top.push_back({id, logprob(id)});
  return out;
}

}  // namespace lg::runtime
