#include "runtime/penalties.h"

#include <algorithm>
#include <cfloat>
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

PenaltyParams penalty_params(const Penalties& p) {
  PenaltyParams f;
  f.repetition = static_cast<float>(std::clamp(p.repetition, static_cast<double>(FLT_TRUE_MIN), static_cast<double>(FLT_MAX)));
  f.presence = static_cast<float>(p.presence);
  f.frequency = static_cast<float>(p.frequency);
  return f;
}

void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p) {
  PenaltyHistory().apply(logits, prompt, output, p);
}

void apply_logit_edits(std::span<float> logits, const PenaltyParams& p, std::span<const LogitEdit> edits) {
  for (const LogitEdit& e : edits)
    if (e.id < 0 || static_cast<size_t>(e.id) >= logits.size())
      throw Error(fmt::format("logit edits: token id {} is outside the logits' vocabulary of {} ids", e.id, logits.size()));
  for (const LogitEdit& e : edits) {
    float& l = logits[static_cast<size_t>(e.id)];
    l = draw::edited(l, p, e);
  }
}

void PenaltyHistory::see(int32_t id, int32_t generated) {
  if (id < 0) throw Error(fmt::format("penalties: token id {} is negative", id));
  auto [it, fresh] = slot_.try_emplace(id, edits_.size());
  if (fresh) edits_.push_back({id, 0});
  edits_[it->second].count += generated;
}

void PenaltyHistory::sync(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const bool same_prompt = built_ && prompt.size() == prompt_n_ && (prompt.empty() || prompt.back() == prompt_last_);
  const bool extends = same_prompt && output.size() >= output_n_ &&
                       (output_n_ == 0 || output[output_n_ - 1] == output_last_);
  if (!extends) {
    built_ = false;  // until the rebuild below completes (see() throws for a negative id)
    edits_.clear();
    slot_.clear();
    for (const int32_t id : prompt) see(id, 0);
    prompt_n_ = prompt.size();
    prompt_last_ = prompt.empty() ? -1 : prompt.back();
    output_n_ = 0;
    built_ = true;
  }
  for (; output_n_ < output.size(); ++output_n_) {
    see(output[output_n_], 1);
    output_last_ = output[output_n_];
  }
}

std::span<const LogitEdit> PenaltyHistory::edits(std::span<const int32_t> prompt, std::span<const int32_t> output,
                                                   const Penalties& p) {
  // Without a repetition penalty a prompt id's edit (count 0) changes nothing: none is sent.
  sync(p.repetition != 1 ? prompt : std::span<const int32_t>{}, output);
  return edits_;
}

void PenaltyHistory::apply(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                           const Penalties& p) {
  if (!p.active()) return;
  apply_logit_edits(logits, penalty_params(p), edits(prompt, output, p));
}

}  // namespace lg::runtime
