// The check that turns NaN/Inf logits into an error instead of a garbage token: a checkpoint
// with non-finite weights (a broken conversion, an overflowed fp16 export) makes every logit
// NaN, and argmax or sampling over NaN picks an arbitrary id that decodes to text like "!!!".
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace lg::runtime {

/// True if `logits` holds no NaN or Inf.
bool all_finite(std::span<const float> logits);

/// Throws lg::Error if `logits` (one position's row, f32[V]) holds a NaN or Inf, naming the lane,
/// the step (prefill or decode), its position and the counts, and pointing at
/// `lg inspect --check MODEL_DIR`. One pass over V floats: cheap next to the forward that made them.
void check_finite_logits(std::span<const float> logits, int64_t position, bool prefill, const std::string& lane);

/// The same error where the row stayed on the lane (a lane's own draw found it not finite), so
/// without the counts.
[[noreturn]] void throw_non_finite_logits(int64_t position, bool prefill, const std::string& lane);

}  // namespace lg::runtime
