// Picking the next token from logits, as users of llama.cpp / vLLM / transformers expect, in the
// order of vLLM's sampler (vllm/v1/sample/sampler.py): first the edits of the logits (min_tokens'
// hold and logit_bias, then the penalties: penalty_math.h, penalties.h), then temperature 0 is
// greedy (argmax, lowest id on a tie); otherwise a draw as runtime/draw.h defines it (temperature,
// min_p, top-k, top-p), with one key a pick from a seeded generator, so a run is reproducible, and
// a lane can make the same draw on its device (SeqStep::draw).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "runtime/draw_math.h"
#include "runtime/penalties.h"

namespace lg::runtime {

struct SamplingOptions {
  double temperature = 0;  ///< 0: greedy; must be >= 0
  int64_t top_k = 0;       ///< keep the k most likely tokens; 0: off
  double top_p = 1;        ///< keep the smallest set whose probability reaches top_p; 1: off; in (0, 1]
  uint64_t seed = 0;       ///< seeds the draw
  /// vLLM's min_p (Nguyen et al. 2024): after temperature, drop the tokens whose probability is
  /// below min_p times the largest one's; 0: off; in [0, 1]. No effect on a greedy pick.
  double min_p = 0;
  Penalties penalties{};   ///< applied before the pick, to greedy picks too
  /// OpenAI's logit_bias: (token id, bias) pairs, ids distinct and >= 0, biases in [-100, 100],
  /// each added to its token's logit before the penalties (vLLM's LogitBiasLogitsProcessor), to
  /// greedy picks too. An id past the vocabulary is refused when a row is edited.
  std::vector<std::pair<int32_t, float>> logit_bias{};
  /// vLLM's min_tokens: while the sequence has generated fewer tokens than this, the ids of
  /// min_tokens_held (the request's eos and stop token ids) cannot be picked (vLLM's
  /// MinTokensLogitsProcessor sets their logits to -inf; here -FLT_MAX, LogitEdit::kHeld).
  int64_t min_tokens = 0;
  std::vector<int32_t> min_tokens_held{};
};

/// Index of the largest logit; the lowest index wins a tie (as torch.argmax on CPU).
int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  /// Throws lg::Error for a negative temperature, a negative top_k, top_p outside (0, 1], min_p
  /// outside [0, 1], a penalty outside its range (check_penalties), a logit_bias with a negative
  /// or repeated id or a bias outside [-100, 100], a negative min_tokens or held id; each message
  /// names the field.
  explicit Sampler(const SamplingOptions& options);
  bool greedy() const { return options_.temperature == 0; }
  /// Whether the request edits the logits before its picks: penalties, a logit_bias, or a
  /// min_tokens that holds ids back (for the request's whole life, so that a sequence keeps one
  /// path through the lane).
  bool edits_logits() const {
    return options_.penalties.active() || !options_.logit_bias.empty() ||
           (options_.min_tokens > 0 && !options_.min_tokens_held.empty());
  }
  /// Whether pick() reads the logits row: when sampling, or greedy over edited logits (their
  /// argmax). Otherwise the lane's own argmax is the token, and a lane step need not return the
  /// f32[V] row at all (SeqStep::want_logits): the fast path of plain greedy requests.
  bool needs_logits() const { return !greedy() || edits_logits(); }
  /// Whether a lane that draws (Lane::draws) makes this sequence's picks itself (SeqStep::draw,
  /// next_draw(), logit_edits()): every pick that reads the logits row, sampled or greedy over
  /// edited logits. The f32[V] row then never leaves the lane.
  bool lane_draws() const { return needs_logits(); }
  /// The next pick's draw: sampled, with a fresh key (each call is one pick: pick() calls it
  /// when it samples, so a sequence draws the same tokens whether the lane or the host makes its
  /// draws); greedy, the draw of the likeliest token (top-k 1, which keeps the lowest id of a
  /// tie, as argmax), which takes no key.
  DrawParams next_draw();
  /// The penalties' factors and the tokens whose logits the next pick edits, for a sequence whose
  /// prompt is `prompt` and whose generated tokens are `output` (empty when nothing is edited): what
  /// a lane applies to the row before next_draw()'s draw (SeqStep::penalty, SeqStep::logit_edits).
  /// Each id at most once. Valid until the next call of logit_edits or pick. Throws lg::Error for a
  /// negative id.
  PenaltyParams penalty() const { return penalty_params(options_.penalties); }
  std::span<const LogitEdit> logit_edits(std::span<const int32_t> prompt, std::span<const int32_t> output);
  /// The next token from f32[V] logits of a sequence whose prompt is `prompt` and whose tokens
  /// generated so far are `output` (read by the penalties and min_tokens only). Throws lg::Error
  /// for an edited id outside [0, V).
  int32_t pick(std::span<const float> logits, std::span<const int32_t> prompt = {},
               std::span<const int32_t> output = {});

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> edited_;      ///< the edited copy of the logits, kept to reuse its memory
  PenaltyHistory history_;        ///< the ids this sequence has seen, kept across its picks
  /// The biased and held ids in id order ([0, fixed_n_), merged for the hold state fixed_hold_:
  /// -1 none yet), then the seen ids that are neither: what logit_edits returns.
  std::vector<LogitEdit> edits_;
  size_t fixed_n_ = 0;
  int fixed_hold_ = -1;
  std::vector<size_t> touched_;  ///< the fixed edits whose count the last step's history set
};

}  // namespace lg::runtime
