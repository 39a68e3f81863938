// The OpenAI request bodies lg serve accepts (/v1/completions, /v1/chat/completions), parsed and
// checked field by field. A bad field is a RequestError naming it, which the server answers
// with HTTP 400 and an OpenAI-style error body ({"error": {"message", "type", "param", "code"}}).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/chat_template.h"

namespace lg::server {

/// Bad input in a request: `param` is the field at fault ("max_tokens", "messages[1].content"),
/// empty when the body as a whole is wrong (malformed JSON).
class RequestError : public std::runtime_error {
 public:
  RequestError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

/// What both endpoints share. Absent sampling fields fall back to generation_config.json.
struct GenerationRequest {
  std::optional<std::string> model;  ///< must name the served model when given
  std::optional<int64_t> max_tokens;  ///< >= 1; absent: 16 for completions, the rest of the context for chat
  std::optional<double> temperature;  ///< >= 0; 0 = greedy
  std::optional<double> top_p;        ///< in (0, 1]
  std::optional<int64_t> top_k;       ///< >= 0, or -1 (vLLM's "off"); 0 = off
  std::optional<uint64_t> seed;       ///< seeds sampling; absent: a fresh random seed
  std::vector<std::string> stop;      ///< stop strings (non-empty, at most 16)
  bool stream = false;
  bool include_usage = false;         ///< stream_options.include_usage: a last chunk with usage
};

struct CompletionRequest {
  GenerationRequest gen;
  std::string prompt;
};

struct ChatRequest {
  GenerationRequest gen;
  std::vector<ChatMessage> messages;
};

/// Parses a /v1/completions body. Throws RequestError for malformed JSON, a missing or non-string
/// `prompt`, or any field of the wrong type or range.
CompletionRequest parse_completion_request(const std::string& body);

/// Parses a /v1/chat/completions body. Throws RequestError for malformed JSON, missing or empty
/// `messages`, a message without a string `role`/`content` (content may also be an array of
/// {"type": "text", "text": ...} parts), or any field of the wrong type or range.
ChatRequest parse_chat_request(const std::string& body);

}  // namespace lg::server
