// A sampled pick defined exactly, so that the host and a lane's device kernel draw the same token
// from the same logits (runtime/draw_math.h holds the shared arithmetic, runtime/cuda/row_draws.h
// the kernel). In vLLM's order (vllm/v1/sample/sampler.py): weights w = e^((l - max) / T); min_p
// keeps the tokens with w >= min_p; top-k the k first of those in the order by logit (ties: lower
// id first); top-p the shortest head of that order whose mass reaches top_p of the kept mass;
// then the draw: the first token, in id order, whose running mass passes u times the nucleus'
// mass (any fixed order gives the same distribution; id order needs no sort on a GPU).
#pragma once

#include <cstdint>
#include <span>

#include "runtime/draw_math.h"
#include "runtime/penalty_math.h"

namespace lg::runtime {

/// The token `p` draws from f32[V] logits (finite: the caller checks). Costs O(V) plus a sort of
/// the kept head when top-k or top-p cut. Throws lg::Error for empty logits, a temperature
/// inverse that is not positive, or min_p, top_p, top_k or u outside their ranges (DrawParams).
int32_t draw_token(std::span<const float> logits, const DrawParams& p);

/// draw_token over `logits` penalised by `edits` and `pen` first (runtime/penalty_math.h), as a
/// lane's device draw makes it (SeqStep::draw, penalty, penalty_edits): the host's form for lanes
/// without a device. Returns -1 for a row that holds a NaN or Inf (as the device draw does).
/// Throws lg::Error as draw_token does, and for an edit's id outside [0, V).
int32_t draw_token(std::span<const float> logits, const DrawParams& p, const PenaltyParams& pen,
                   std::span<const PenaltyEdit> edits);

}  // namespace lg::runtime
