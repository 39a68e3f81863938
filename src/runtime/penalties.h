// Penalties on the logits from the tokens a sequence has seen, as vLLM's sampler applies them
// (vllm/model_executor/layers/utils.py, apply_penalties), before temperature and before a greedy
// argmax:
//  - repetition_penalty (CTRL, Keskar et al. 2019; transformers' RepetitionPenaltyLogitsProcessor):
//    every distinct id of the prompt and of the generated tokens has its logit divided by the
//    penalty when positive, multiplied by it otherwise;
//  - then frequency_penalty and presence_penalty (OpenAI's definition), over the generated tokens
//    only: logit -= frequency * count, then logit -= presence (for ids generated at least once).
// The arithmetic is vLLM's, in f32 and in its order (runtime/penalty_math.h, shared with the
// device draw), so a penalised logit is the float vLLM's torch ops compute for it, except that a
// finite logit pushed past f32's range is held at +-FLT_MAX where torch makes it +-inf.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/penalty_math.h"

namespace lg::runtime {

struct Penalties {
  double repetition = 1;  ///< > 0; 1: off. > 1 discourages repeating, < 1 encourages it
  double presence = 0;    ///< in [-2, 2]; 0: off
  double frequency = 0;   ///< in [-2, 2]; 0: off
  /// Whether any penalty changes the logits (a greedy pick then reads the logits row: the lane's
  /// own draw, or the row brought to the host).
  bool active() const { return repetition != 1 || presence != 0 || frequency != 0; }
};

/// Throws lg::Error naming the field (`repetition_penalty`, `presence_penalty`,
/// `frequency_penalty`) for a value outside vLLM's ranges (SamplingParams._verify_args):
/// repetition > 0, presence and frequency in [-2, 2]; NaN is outside every range.
void check_penalties(const Penalties& p);

/// The f32 factors the penalties' arithmetic (runtime/penalty_math.h) uses for `p`: each value
/// rounded to f32, the repetition penalty held in [denorm_min, FLT_MAX] (a double past f32's range
/// would round to inf or 0, and 0 x inf is NaN). Assumes check_penalties(p) passed.
PenaltyParams penalty_params(const Penalties& p);

/// Applies `p` in place to one position's f32[V] logits. `prompt`: the sequence's prompt ids;
/// `output`: the ids it generated so far (both in [0, V), else lg::Error naming the id). Touches
/// only their logits (no V-sized table). Does nothing when !p.active(). One call reads the whole
/// history; a sequence's steps use a PenaltyHistory instead.
void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                     const Penalties& p);

/// Applies `edits` (PenaltyHistory::edits, Sampler::logit_edits) with `p` in place to f32[V]
/// logits, one edit at a time by draw::edited: the arithmetic a lane's device draw applies.
/// Throws lg::Error for an edit's id outside [0, V).
void apply_logit_edits(std::span<float> logits, const PenaltyParams& p, std::span<const LogitEdit> edits);

/// The tokens one sequence has seen, kept across its steps as the penalties read them: the
/// prompt's distinct ids are found once and the output's counts kept as its tokens are appended,
/// so a step costs O(distinct ids seen) and the new tokens, not a pass over the whole history
/// (per-token host work on the decode path). A history that is not the last one extended
/// (another prompt, a shorter or changed output) is read afresh.
class PenaltyHistory {
 public:
  /// apply_logit_edits of this history's edits: the same floats as vLLM's apply_penalties,
  /// up to the range clamp draw::edited documents.
  void apply(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
             const Penalties& p);
  /// The edits `p` makes: every distinct id of `output`, and of `prompt` when the repetition
  /// penalty is on (the only one that reads the prompt), each with how often `output` holds it, in
  /// first seen order. Valid until the next call. Throws lg::Error for a negative id.
  std::span<const LogitEdit> edits(std::span<const int32_t> prompt, std::span<const int32_t> output,
                                     const Penalties& p);

 private:
  void sync(std::span<const int32_t> prompt, std::span<const int32_t> output);
  void see(int32_t id, int32_t generated);

  bool built_ = false;
  size_t prompt_n_ = 0;               ///< prompt length the edits below were read from
  int32_t prompt_last_ = -1;          ///< its last id (a cheap check that it is the same prompt)
  size_t output_n_ = 0;               ///< output tokens counted
  int32_t output_last_ = -1;          ///< the last of them
  std::vector<LogitEdit> edits_;    ///< the distinct ids seen, with their output counts
  std::unordered_map<int32_t, size_t> slot_;  ///< id -> its index in edits_
};

}  // namespace lg::runtime
