// The OpenAI request and response shapes that lg serve (HTTP) and lg batch (batch files) share:
// a request body validated and tokenized into a PreparedRequest, and the bodies that answer it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "server/engine.h"
#include "server/request.h"

namespace lg::server {

/// A request after validation: everything needed to run it, now or in a stream.
struct PreparedRequest {
  Endpoint kind = Endpoint::completion;
  GenerationRequest gen;
  std::vector<int32_t> prompt_ids;
  std::string id;             ///< "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;        ///< unix seconds
  std::string model;          ///< the served model's id
  /// max_tokens when the body has none: 16 for completions (OpenAI's and vLLM's default); 0 for
  /// chat: generation_config.json's max_new_tokens, else the rest of the context (Engine::start)
  int64_t default_max = 0;
  bool token_ids = false;     ///< answers carry `token_ids` (asked for, or no tokenizer to make text)
  /// The engine's tokenizer, which shows the tokens of `logprobs`; null without one (random
  /// weights) or with `return_tokens_as_token_ids`: tokens are then shown as "token_id:ID".
  const tokenizer::Tokenizer* tokenizer = nullptr;
};

/// A request for another model than the one served: answered with 404.
class ModelNotFound : public RequestError {
 public:
  using RequestError::RequestError;
};

/// The prompt text of a chat request, rendered by `tmpl`. Throws RequestError (400) when the
/// request is at fault (no template, the template raises, the result is too large) and lg::Error
/// (a 500) when the template or its renderer is broken.
std::string render_chat(const chat::ChatTemplate& tmpl, const ChatRequest& request);

/// Parses `body` for the endpoint, renders chat messages with `tmpl`, tokenizes (or checks the
/// token ids sent as the prompt). Throws RequestError (400) for a bad body or prompt, a max_tokens
/// that does not fit the context after the prompt (Engine::check_max_tokens), a chat
/// request or stop strings on an engine without a tokenizer; ModelNotFound (404) when `model`
/// names another model; and what render_chat throws.
PreparedRequest prepare_request(const Engine& engine, const chat::ChatTemplate& tmpl, Endpoint kind,
                                const std::string& body);

/// The logprobs of `tokens` in the endpoint's shape (logprobs_json.h); null when the request did
/// not ask for them. `text_offset`: completions' characters before these tokens, advanced.
nlohmann::ordered_json choice_logprobs(const PreparedRequest& p, std::span<const runtime::TokenLogprobs> tokens,
                               int64_t& text_offset);

/// The 404 message for a `model` the engine does not serve, naming every name it does serve.
std::string model_not_found(const Engine& engine, const std::string& name);

int64_t now_unix();
/// OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param);
nlohmann::ordered_json usage_json(const EngineResult& r);
/// The usage of a request's choices together: its prompt once, their generated tokens summed (as
/// OpenAI and vLLM count a request with n > 1).
nlohmann::ordered_json usage_json(std::span<const EngineResult> choices);
/// {"prompt_tokens", "completion_tokens", "total_tokens"}: a request's usage so far.
nlohmann::ordered_json usage_json(int64_t prompt_tokens, int64_t completion_tokens);
/// vLLM's stop_reason of a choice: the stop string that cut it, or the stop token id that ended it
/// (EngineResult::stop_string, stop_token); null otherwise (eos, length, abort).
nlohmann::ordered_json stop_reason_json(const EngineResult& r);
/// The whole answer of a request that did not stream ("text_completion" / "chat.completion"): a
/// choice for each result, in order (`index` i), with `token_ids` when p.token_ids and `logprobs`
/// when the request asked for them (server/logprobs_json.h), else null. Its keys in OpenAI's order
/// (id, object, created, model, choices, usage), as vLLM's answers carry them.
nlohmann::ordered_json response_body(const PreparedRequest& p, std::span<const EngineResult> choices);
/// JSON text; invalid UTF-8 is replaced, never thrown on.
std::string dump(const nlohmann::json& j);
std::string dump(const nlohmann::ordered_json& j);

}  // namespace lg::server
