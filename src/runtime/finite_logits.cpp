#include "runtime/finite_logits.h"

#include <algorithm>
#include <cmath>

#include "support/error.h"

namespace lg::runtime {

namespace {

std::string message(int64_t position, bool prefill, const std::string& lane, const std::string& counts) {
  return "lane " + lane + ": the " + (prefill ? "prefill" : "decode") + " step at position " + std::to_string(position) +
         " gave non-finite logits (" + counts +
         "): the weights or the program (a --program .lg of your own: a division by zero, a zero RoPE "
         "theta) make NaN/Inf; `lg inspect --check MODEL_DIR` names any non-finite weight tensors";
}

}  // namespace

bool all_finite(std::span<const float> logits) {
  return std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); });
}

void check_finite_logits(std::span<const float> logits, int64_t position, bool prefill, const std::string& lane) {
  size_t nan = 0, inf = 0;
  for (const float x : logits) {
    if (std::isnan(x)) ++nan;
    else if (std::isinf(x)) ++inf;
  }
  if (nan + inf == 0) return;
  throw Error(message(position, prefill, lane,
                      std::to_string(nan) + " NaN and " + std::to_string(inf) + " Inf of " + std::to_string(logits.size())));
}

void throw_non_finite_logits(int64_t position, bool prefill, const std::string& lane) {
  throw Error(message(position, prefill, lane, "a NaN or Inf among them"));
}

}  // namespace lg::runtime
