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

void check_id(int32_t id, size_t vocab) {
  if (id < 0 || static_cast<size_t>(id) >= vocab)
    throw Error(fmt::format("penalties: token id {} is outside the logits' vocabulary of {} ids", id, vocab));
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p) {
  PenaltyHistory().apply(logits, prompt, output, p);
}

void PenaltyHistory::sync(std::span<const int32_t> prompt, std::span<const int32_t> output, size_t vocab) {
  const bool same_prompt = built_ && vocab == vocab_ && prompt.size() == prompt_n_ &&
                           (prompt.empty() || prompt.back() == prompt_last_);
  const bool extends = same_prompt && output.size() >= output_n_ &&
                       (output_n_ == 0 || output[output_n_ - 1] == output_last_);
  if (!extends) {
    prompt_ids_.assign(prompt.begin(), prompt.end());
    for (const int32_t id : prompt_ids_) check_id(id, vocab);
    std::sort(prompt_ids_.begin(), prompt_ids_.end());
    prompt_ids_.erase(std::unique(prompt_ids_.begin(), prompt_ids_.end()), prompt_ids_.end());
    prompt_n_ = prompt.size();
    prompt_last_ = prompt.empty() ? -1 : prompt.back();
    vocab_ = vocab;
    output_ids_.clear();
    output_count_.clear();
    slot_.clear();
    output_n_ = 0;
    built_ = true;
  }
  for (; output_n_ < output.size(); ++output_n_) {
    const int32_t id = output[output_n_];
    check_id(id, vocab);
    auto [it, fresh] = slot_.try_emplace(id, output_ids_.size());
    if (fresh) {
      output_ids_.push_back(id);
      output_count_.push_back(0);
    }
    ++output_count_[it->second];
    output_last_ = id;
  }
}

void PenaltyHistory::apply(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                           const Penalties& p) {
  if (!p.active()) return;
  sync(prompt, output, logits.size());
  if (p.repetition != 1) {
    // Every id seen once, prompt or output (vLLM: prompt_mask | output_mask). f32 division and
    // multiplication, as vLLM's kernel does them on f32 logits with an f32 penalty.
    const auto r = static_cast<float>(p.repetition);
    auto penalise = [&](int32_t id) {
      float& l = logits[static_cast<size_t>(id)];
      l = l > 0 ? l / r : l * r;
    };
    for (const int32_t id : prompt_ids_) penalise(id);
    for (const int32_t id : output_ids_)
      if (!std::binary_search(prompt_ids_.begin(), prompt_ids_.end(), id)) penalise(id);
  }
  // vLLM: logits -= frequency * output_bin_counts; logits -= presence * output_mask (f32 tensors;
  // the count is exact in f32 below 2^24). An id never generated is left as it is (x - 0 == x).
  const auto f = static_cast<float>(p.frequency), pr = static_cast<float>(p.presence);
  for (size_t k = 0; k < output_ids_.size(); ++k) {
    float& l = logits[static_cast<size_t>(output_ids_[k])];
    l -= f * static_cast<float>(output_count_[k]);
    l -= pr;
  }
}

}  // namespace lg::runtime
