// Generating after one prompt on any lane: the scheduler (scheduler.h) with one request. Prefill
// the prompt (in chunks of the lane's token budget), then decode one token per step until an
// end-of-sequence id, the token limit, or the end of the context, timing both phases the way
// serving people report them (prefill tokens/s, time to first token, decode tokens/s).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/lane.h"
#include "runtime/logprobs.h"
#include "runtime/sampler.h"

namespace lg::runtime {

struct GenerateOptions {
  int64_t max_new_tokens = 128;  ///< >= 1
  SamplingOptions sampling;      ///< temperature 0: greedy
  /// Stop after producing one of these (config.json's, generation_config.json's and the tokenizer's
  /// eos; a server adds a request's stop_token_ids), once sampling.min_tokens tokens are generated.
  std::vector<int64_t> eos_ids;
  /// Called with every new token as soon as it is picked (the eos token included).
  std::function<void(int32_t)> on_token;
  /// -1: no log probabilities. n in [0, kMaxTopLogprobs]: each new token's log probability and
  /// those of the n likeliest tokens at its position (runtime/logprobs.h), into
  /// Generation::logprobs and on_logprobs. The lane then returns the token's logits row to the
  /// host, which makes the pick (the same pick a lane's own draw makes).
  int32_t logprobs = -1;
  /// With logprobs >= 0: called with each new token's log probabilities just before on_token.
  std::function<void(const TokenLogprobs&)> on_logprobs;
  /// Asked before the request starts (true: it never runs) and after each new token (after
  /// on_token); true ends generation with stop "caller" (a server's stop string matched, or its
  /// client went away). Empty: never.
  std::function<bool()> should_stop;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  double prefill_s = 0;        ///< from the first prefill step's start to the first token
  double first_token_s = 0;    ///< from submission (waiting in a queue included) to the first token
  int64_t decode_steps = 0;    ///< steps after the prefill (one token each)
  double decode_s = 0;
  std::string stop;            ///< "eos", "max_tokens", "context" (context full), "caller" (should_stop) or "error"
  double prefill_tokens_per_s() const { return prefill_s > 0 ? static_cast<double>(prompt_tokens) / prefill_s : 0; }
  double decode_tokens_per_s() const { return decode_s > 0 ? static_cast<double>(decode_steps) / decode_s : 0; }
};

struct Generation {
  std::vector<int32_t> tokens;  ///< the new tokens, the stopping eos included
  std::vector<TokenLogprobs> logprobs;  ///< one per token when GenerateOptions::logprobs >= 0, else empty
  GenerationStats stats;
};

/// The first id of `ids` outside [0, vocab_size) (config.json's vocab_size), if any: a tokenizer
/// from another checkpoint gives such ids, and the embedding gather cannot take them.
std::optional<int32_t> first_out_of_vocab(std::span<const int32_t> ids, int64_t vocab_size);

/// Why a prompt of `n` tokens leaves no room to generate in a context of `context` tokens (prompt
/// and completion together): it is longer than the context, or fills all of it. nullopt when
/// n < context. `what` names the prompt at the start of the message ("the prompt" for lg run,
/// "'prompt'" for a request field). lg run, lg serve and lg batch refuse such a prompt with this
/// message, so the three agree on the rule and on its words.
std::optional<std::string> prompt_context_error(int64_t n, int64_t context, std::string_view what);

/// Why `max_tokens` new tokens cannot follow a prompt of `n` tokens in a context of `context`
/// tokens (prompt and completion together); nullopt when n + max_tokens <= context. The message
/// names the three sizes and what does fit; `what` names the limit asked for ("'max_tokens'" for
/// a request field, "--max-tokens" for lg run). lg serve and lg batch refuse such a request with
/// it (vLLM answers 400 too, rather than generate less than was asked for without saying so); lg
/// run, whose -n is an upper bound with a default, says it and stops at the context.
std::optional<std::string> completion_context_error(int64_t n, int64_t max_tokens, int64_t context,
                                                    std::string_view what);

/// Generates after `prompt` on `lane`, alone. Throws lg::Error for an empty prompt, a prompt
/// longer than the lane's context (max_seq) or KV pool, max_new_tokens < 1, sampling options the
/// Sampler refuses, or (when sampling or penalising) non-finite logits (check_finite_logits).
Generation generate(Lane& lane, std::span<const int32_t> prompt, const GenerateOptions& options);

}  // namespace lg::runtime
