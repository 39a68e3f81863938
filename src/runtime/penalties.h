// Penalties on the logits from the tokens a sequence has seen, as vLLM's sampler applies them
// (vllm/model_executor/layers/utils.py, apply_penalties), before temperature and before a greedy
// argmax:
//  - repetition_penalty (CTRL, Keskar et al. 2019; transformers' RepetitionPenaltyLogitsProcessor):
//    every distinct id of the prompt and of the generated tokens has its logit divided by the
//    penalty when positive, multiplied by it otherwise;
//  - then frequency_penalty and presence_penalty (OpenAI's definition), over the generated tokens
//    only: logit -= frequency * count, then logit -= presence (for ids generated at least once).
// The arithmetic is vLLM's, in f32 and in its order, so a penalised logit is the float vLLM's
// torch ops compute for it.
#pragma once

#include <cstdint>
#include <span>

namespace lg::runtime {

struct Penalties {
  double repetition = 1;  ///< > 0; 1: off. > 1 discourages repeating, < 1 encourages it
  double presence = 0;    ///< in [-2, 2]; 0: off
  double frequency = 0;   ///< in [-2, 2]; 0: off
  /// Whether any penalty changes the logits (pick() then needs the lane's logits row even greedy).
  bool active() const { return repetition != 1 || presence != 0 || frequency != 0; }
};

/// Throws lg::Error naming the field (`repetition_penalty`, `presence_penalty`,
/// `frequency_penalty`) for a value outside vLLM's ranges (SamplingParams._verify_args):
/// repetition > 0, presence and frequency in [-2, 2]; NaN is outside every range.
void check_penalties(const Penalties& p);

/// Applies `p` in place to one position's f32[V] logits. `prompt`: the sequence's prompt ids;
/// `output`: the ids it generated so far (both in [0, V), else lg::Error naming the id). Costs
/// O(n log n) in the n = prompt + output ids and touches only their logits (no V-sized table per
/// step). Does nothing when !p.active().
void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p);

}  // namespace lg::runtime
