#include "runtime/penalties.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"

namespace lg::runtime {

void check_penalties(const Penalties& p) {
  if (!(p.repetition > 0)) throw Error(fmt::format("repetition_penalty must be > 0, got {}", p.repetition));
  if (!(p.presence >= -2 && p.presence <= 2))
    throw Error(fmt::format("presence_penalty must be in [-2, 2], got {}", p.presence));
  if (!(p.frequency >= -2 && p.frequency <= 2))
    throw Error(fmt::format("frequency_penalty must be in [-2, 2], got {}", p.frequency));
}

namespace {

// The ids of `tokens`, sorted (with repeats), each checked to index the logits.
std::vector<int32_t> sorted_ids(std::span<const int32_t> tokens, size_t vocab) {
  std::vector<int32_t> ids(tokens.begin(), tokens.end());
  for (const int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= vocab)
      throw Error(fmt::format("penalties: token id {} is outside the logits' vocabulary of {} ids", id, vocab));
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p) {
  if (!p.active()) return;
  const std::vector<int32_t> out = sorted_ids(output, logits.size());
  if (p.repetition != 1) {
    // Every id seen once, prompt or output (vLLM: prompt_mask | output_mask). f32 division and
    // multiplication, as vLLM's kernel does them on f32 logits with an f32 penalty.
    std::vector<int32_t> seen = sorted_ids(prompt, logits.size());
    seen.insert(seen.end(), out.begin(), out.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    const auto r = static_cast<float>(p.repetition);
    for (const int32_t id : seen) {
      float& l = logits[static_cast<size_t>(id)];
      l = l > 0 ? l / r : l * r;
    }
  }
  // vLLM: logits -= frequency * output_bin_counts; logits -= presence * output_mask (f32 tensors;
  // the count is exact in f32 below 2^24). An id never generated is left as it is (x - 0 == x).
  const auto f = static_cast<float>(p.frequency), pr = static_cast<float>(p.presence);
  for (size_t k = 0; k < out.size();) {
    size_t end = k;
    while (end < out.size() && out[end] == out[k]) ++end;
    float& l = logits[static_cast<size_t>(out[k])];
    l -= f * static_cast<float>(end - k);
    l -= pr;
    k = end;
  }
}

}  // namespace lg::runtime
