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
#include <unordered_map>
#include <vector>

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
/// `output`: the ids it generated so far (both in [0, V), else lg::Error naming the id). Touches
/// only their logits (no V-sized table). Does nothing when !p.active(). One call sorts the whole
/// history; a sequence's steps use a PenaltyHistory instead.
void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p);

/// apply_penalties for the steps of one sequence: the prompt's distinct ids are found once and
/// the output's counts kept as its tokens are appended, so a step costs O(distinct ids seen) and
/// the new tokens, not a sort of the whole history (per-token host work on the decode path). A
/// history that is not the last one extended (another prompt, a shorter or changed output) is
/// read afresh. The logits are the same floats apply_penalties computes.
class PenaltyHistory {
 public:
  void apply(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
             const Penalties& p);

 private:
  void sync(std::span<const int32_t> prompt, std::span<const int32_t> output, size_t vocab);

  bool built_ = false;
  size_t vocab_ = 0;                   ///< the logits' size the ids were checked against
  size_t prompt_n_ = 0;                ///< prompt length the ids below were read from
  int32_t prompt_last_ = -1;           ///< its last id (a cheap check that it is the same prompt)
  std::vector<int32_t> prompt_ids_;    ///< the prompt's distinct ids, sorted
  size_t output_n_ = 0;                ///< output tokens counted
  int32_t output_last_ = -1;           ///< the last of them
  std::vector<int32_t> output_ids_;    ///< the output's distinct ids, in first-seen order
  std::vector<int32_t> output_count_;  ///< how often each of output_ids_ was generated
  std::unordered_map<int32_t, size_t> slot_;  ///< id -> its index in output_ids_
};

}  // namespace lg::runtime
