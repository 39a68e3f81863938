#include "runtime/sampler.h"

#include <fmt/format.h>

#include <algorithm>
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
}

int32_t Sampler::pick(std::span<const float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  if (options_.penalties.active()) {
    penalised_.assign(logits.begin(), logits.end());
    history_.apply(penalised_, prompt, output, options_.penalties);
    logits = penalised_;
  }
  if (greedy()) return argmax(logits);
  return draw_token(logits, next_draw());
}

std::span<const PenaltyEdit> Sampler::penalty_edits(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  if (!options_.penalties.active()) return {};
  return history_.edits(prompt, output, options_.penalties);
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
