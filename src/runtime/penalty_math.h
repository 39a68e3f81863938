// The penalties' arithmetic on one logit (runtime/penalties.h defines them, after vLLM's
// apply_penalties), shared by the host (PenaltyHistory) and the device draw (runtime/cuda/
// row_draws.cu) so that a penalised row is the same floats on both: one rounded f32 operation at a
// time, none contracted into an FMA. C++17: nvcc compiles this header too.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "runtime/draw_math.h"

namespace lg {

/// One token a sequence has seen, as the penalties read it: its id and how often the sequence
/// generated it (0: in the prompt only). Every edit is in the prompt or the output, so the
/// repetition penalty applies to each; frequency and presence to those with a count.
struct PenaltyEdit {
  int32_t id = 0;
  int32_t count = 0;
};

/// The penalties as f32 factors (runtime::penalty_params makes them from a request's values).
struct PenaltyParams {
  float repetition = 1;  ///< in [denorm_min, FLT_MAX]; 1: off
  float presence = 0;
  float frequency = 0;
};

namespace draw {

/// Logit `l` of a token seen as `count` says, penalised in vLLM's order: divided by the
/// repetition penalty when positive, multiplied by it otherwise; then, for a generated token,
/// minus frequency x count, minus presence. A non-finite `l` is returned as it is (the caller
/// reports it); a finite one the penalties push past f32's range is held at +-FLT_MAX (vLLM's
/// torch ops would make it +-inf), so a finite row stays finite and its draw is defined.
LG_DRAW_HD float penalised(float l, const PenaltyParams& p, int32_t count) {
  if (!(l - l == 0.f)) return l;  // NaN or +-inf (spelled without isfinite: host and device alike)
  float v = l;
  if (p.repetition != 1.f) v = v > 0.f ? div(v, p.repetition) : mul(v, p.repetition);
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
