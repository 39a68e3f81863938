// The edits a request makes to one logit before its pick, in vLLM's sampler order
// (vllm/v1/sample/sampler.py): min_tokens' hold and logit_bias first, then the penalties
// (runtime/penalties.h, after vLLM's apply_penalties). Shared by the host (Sampler, PenaltyHistory)
// and the device draw (runtime/cuda/row_draws.cu) so that an edited row is the same floats on
// both: one rounded f32 operation at a time, none contracted into an FMA. C++17: nvcc compiles this
// header too.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "runtime/draw_math.h"

namespace lg {

/// One token whose logit a request edits before its pick: a token the sequence has seen (the
/// penalties read how often it generated it), a token the request biases (OpenAI's logit_bias),
/// or one it holds back (vLLM's min_tokens), or several of these at once.
struct LogitEdit {
  int32_t id = 0;
  /// How often the sequence generated the token; 0: in the prompt only; kUnseen: neither (an
  /// edit for its bias alone). The repetition penalty applies to every seen token, frequency and
  /// presence to those with a count.
  int32_t count = 0;
  /// Added to the logit before the penalties (logit_bias, in [-100, 100]); kHeld: the token may
  /// not be picked (its logit becomes -FLT_MAX, which no draw takes while any other is finite).
  float bias = 0;
  static constexpr int32_t kUnseen = -1;
  static constexpr float kHeld = -FLT_MAX;
};

/// The penalties as f32 factors (runtime::penalty_params makes them from a request's values).
struct PenaltyParams {
  float repetition = 1;  ///< in [denorm_min, FLT_MAX]; 1: off
  float presence = 0;
  float frequency = 0;
};

namespace draw {

/// Logit `l` edited as `e` says, in vLLM's order: a held token's becomes -FLT_MAX (vLLM: -inf);
/// else plus e.bias; then, for a seen token, divided by the repetition penalty when positive,
/// multiplied by it otherwise; then, for a generated token, minus frequency x count, minus
/// presence. A non-finite `l` is returned as it is (the caller reports it); a finite one the edits
/// push past f32's range is held at +-FLT_MAX (vLLM's torch ops would make it +-inf), so a finite
/// row stays finite and its draw is defined.
LG_DRAW_HD float edited(float l, const PenaltyParams& p, const LogitEdit& e) {
  if (!(l - l == 0.f)) return l;  // NaN or +-inf (spelled without isfinite: host and device alike)
  if (e.bias == LogitEdit::kHeld) return LogitEdit::kHeld;
  float v = e.bias != 0.f ? add(l, e.bias) : l;
  if (v > FLT_MAX) v = FLT_MAX;
  if (v < -FLT_MAX) v = -FLT_MAX;
  const int32_t count = e.count;
  if (count != LogitEdit::kUnseen && p.repetition != 1.f) v = v > 0.f ? div(v, p.repetition) : mul(v, p.repetition);
  if (count > 0) {
    v = sub(v, mul(p.frequency, static_cast<float>(count)));
    v = sub(v, p.presence);
  }
  if (v > FLT_MAX) return FLT_MAX;
  if (v < -FLT_MAX) return -FLT_MAX;
  return v;
}

}  // namespace draw
}  // namespace lg
