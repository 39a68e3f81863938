// The log probabilities a request can ask for beside its tokens (OpenAI's `logprobs` and
// `top_logprobs`): each generated token's, and those of the likeliest tokens at its position.
// They are the model's own distribution, log_softmax of the raw logits, before the penalties,
// the temperature and the cuts change it for the draw, as vLLM's default `logprobs_mode`
// ("raw_logprobs", vllm/v1/sample/sampler.py) returns them; a greedy request's are the same.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lg::runtime {

/// The most alternatives a request may ask for at each position (OpenAI's top_logprobs limit of
/// 20, vLLM's default max_logprobs).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0;  ///< natural log, <= 0
};

/// One generated token's log probability and, when asked, the likeliest tokens at its position.
struct TokenLogprobs {
  TokenLogprob chosen;
  /// The `top` likeliest tokens, likeliest first (the lower id first where two logits are equal,
  /// as argmax picks); the chosen token is among them only if it is one of them.
  std::vector<TokenLogprob> top;
};

/// The log probabilities at one position from its f32[V] logits row (finite: the caller checks
/// it, runtime/finite_logits.h): logits[i] - logsumexp(logits), the sum in double. `chosen` in
/// [0, V) and `top` in [0, kMaxTopLogprobs]; throws lg::Error otherwise.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top);

}  // namespace lg::runtime
