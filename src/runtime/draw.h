// A sampled pick defined exactly, so that the host and a lane's device kernel draw the same token
// from the same logits (runtime/draw_math.h holds the shared arithmetic, runtime/cuda/row_draws.h
// the kernel). In vLLM's order (vllm/v1/sample/sampler.py): weights w = e^((l - max) / T); min_p
// keeps the tokens with w >= min_p; top-k the k first of those in the order by logit (ties: lower
// id first); top-p the shortest head of that order whose mass reaches top_p of the kept mass;
// then the draw: the exponential race over the nucleus (as vLLM's sampler divides the
// probabilities by Exp(1) variates and takes the argmax): token i's place is E_i / w_i, E_i
// drawn from the request's key and i alone (draw::race_place), and the least place wins. Each
// token wins with its share of the nucleus' mass, as an inverse CDF would draw it, and the pick
// stays put when the logits round slightly otherwise (a batched step against a run alone)
// unless its two best places nearly tie: an inverse CDF's moves with the sum of every weight
// before it, often in a flat nucleus of thousands of tokens.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/draw_math.h"
#include "runtime/penalty_math.h"

namespace lg::runtime {

/// The token `p` draws from f32[V] logits (finite: the caller checks). Costs O(V) (expected: top-k
/// and top-p are selections, not sorts). Throws lg::Error for empty logits, a temperature
/// inverse that is not positive, or min_p, top_p or top_k outside their ranges (DrawParams).
int32_t draw_token(std::span<const float> logits, const DrawParams& p);

/// draw_token over `logits` edited by `edits` and `pen` first (runtime/penalty_math.h), as a
/// lane's device draw makes it (SeqStep::draw, penalty, logit_edits): the host's form for lanes
/// without a device. Returns -1 for a row that holds a NaN or Inf (as the device draw does).
/// Throws lg::Error as draw_token does, and for an edit's id outside [0, V).
int32_t draw_token(std::span<const float> logits, const DrawParams& p, const PenaltyParams& pen,
                   std::span<const LogitEdit> edits);

}  // namespace lg::runtime
