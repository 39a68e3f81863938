// The `logprobs` of an answer, in each endpoint's shape (OpenAI's API, as vLLM fills it):
// completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"} and chat's
// {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}, from runtime::TokenLogprobs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "runtime/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace lg::server {

/// How a token is shown in logprobs: its text (HF's decode([id]), as vLLM shows it; a piece of
/// a UTF-8 character reads U+FFFD) and its raw bytes (which a client joins to rebuild such a
/// character, OpenAI's `bytes`). Without a tokenizer (random weights) "token_id:ID", as vLLM's
/// return_tokens_as_token_ids writes it.
struct TokenText {
  std::string text;
  std::vector<int> bytes;
};
TokenText token_text(const tokenizer::Tokenizer* tokenizer, int32_t id);

/// The log probability as JSON: at least -9999 (vLLM's floor; a -inf is no JSON number).
double json_logprob(float logprob);

/// Completions' logprobs of `tokens` (one TokenLogprobs a token): each token's text and logprob,
/// the chosen token with the alternatives as {text: logprob} (OpenAI's top_logprobs: the chosen
/// token first, then the likeliest in rank order, as vLLM's dict; a text two tokens share appears
/// once), and each token's offset in the
/// answer's text, in characters (code points, as Python's len), from `text_offset` (the
/// characters of the tokens before these: a stream's earlier chunks). With `skip_special` (the
/// request's skip_special_tokens) a special token, left out of the answer's text, adds nothing
/// to the offsets after it. `text_offset` is advanced past these tokens.
nlohmann::ordered_json completion_logprobs(const tokenizer::Tokenizer* tokenizer,
                                           std::span<const runtime::TokenLogprobs> tokens, bool skip_special,
                                           int64_t& text_offset);

/// Chat's logprobs of `tokens`: {"content": [{"token", "logprob", "bytes", "top_logprobs":
/// [{"token", "logprob", "bytes"}...]}]}, top_logprobs the likeliest, likeliest first.
nlohmann::ordered_json chat_logprobs(const tokenizer::Tokenizer* tokenizer,
                                     std::span<const runtime::TokenLogprobs> tokens);

}  // namespace lg::server
