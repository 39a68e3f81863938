// The OpenAI request bodies lg serve accepts (/v1/completions, /v1/chat/completions), parsed and
// checked field by field. A bad field is a RequestError naming it, which the server answers
// with HTTP 400 and an OpenAI-style error body ({"error": {"message", "type", "param", "code"}}).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lg::server {

/// Which body parser a request takes: /v1/completions or /v1/chat/completions.
enum class Endpoint { completion, chat };

/// Bad input in a request: `param` is the field at fault ("max_tokens", "messages[1].content"),
/// empty when the body as a whole is wrong (malformed JSON).
class RequestError : public std::runtime_error {
 public:
  RequestError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

/// What both endpoints share. Absent sampling fields fall back to generation_config.json (its
/// temperature, top_k, top_p, min_p and repetition_penalty), as vLLM's defaults do.
/// The most choices one request may ask for (`n`): OpenAI's limit.
inline constexpr int64_t kMaxChoices = 128;

struct GenerationRequest {
  std::optional<std::string> model;  ///< must name the served model when given (not null or "")
  /// >= 1; absent: 16 for completions, for chat generation_config.json's max_new_tokens, else the
  /// rest of the context
  std::optional<int64_t> max_tokens;
  /// The field max_tokens was read from ("max_tokens", or chat's "max_completion_tokens"), so that
  /// a value the context cannot hold is refused naming what the client sent.
  std::string max_tokens_field = "max_tokens";
  std::optional<double> temperature;  ///< >= 0; 0 = greedy
  std::optional<double> top_p;        ///< in (0, 1]
  std::optional<int64_t> top_k;       ///< >= 0, or -1 (vLLM's "off"); 0 = off
  std::optional<double> min_p;        ///< vLLM's; in [0, 1]; 0 = off
  std::optional<double> repetition_penalty;  ///< vLLM's; > 0; 1 = off
  std::optional<double> presence_penalty;    ///< OpenAI's; in [-2, 2]; absent: 0 (off)
  std::optional<double> frequency_penalty;   ///< OpenAI's; in [-2, 2]; absent: 0 (off)
  std::optional<uint64_t> seed;       ///< seeds sampling; absent: a fresh random seed
  std::vector<std::string> stop;      ///< stop strings (non-empty, at most 16)
  /// OpenAI's logit_bias: (token id, bias in [-100, 100]) sorted by id, ids distinct, added to the
  /// logits before the penalties (runtime::SamplingOptions::logit_bias).
  std::vector<std::pair<int32_t, float>> logit_bias;
  /// vLLM's min_tokens: until this many tokens are generated the eos and stop_token_ids cannot be
  /// picked and stop strings do not match (one must end in later text); at most max_tokens.
  int64_t min_tokens = 0;
  /// vLLM's stop_token_ids: generation also ends after one of these, which, as an eos token, is
  /// in token_ids and logprobs but not in the text; they end it with ignore_eos too.
  std::vector<int32_t> stop_token_ids;
  /// Choices to generate, 1..kMaxChoices: n sequences from the same prompt, each with its own draw
  /// (seed + i for choice i when `seed` is given, as vLLM seeds them; greedy choices are equal).
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;         ///< stream_options.include_usage: a last chunk with usage
  /// vLLM's stream_options.continuous_usage_stats: every chunk carries the usage so far (with
  /// include_usage, which it implies when absent).
  bool continuous_usage_stats = false;
  bool ignore_eos = false;            ///< vLLM's extension: generate past the eos token (benchmarks)
  bool return_token_ids = false;      ///< vLLM's extension: the generated ids beside the text
  /// -1: no log probabilities; n >= 0: each generated token's and the n likeliest at its position
  /// (completions' `logprobs`; chat's `top_logprobs` with `logprobs` true), runtime/logprobs.h.
  int32_t logprobs = -1;
  /// vLLM's `return_tokens_as_token_ids`: logprobs show each token as "token_id:ID", not its text.
  bool tokens_as_ids = false;
  /// vLLM's extension: the text leaves out special tokens (tokenizer.json's added tokens marked
  /// "special"), as vLLM's default does; false shows them. token_ids are unaffected.
  bool skip_special_tokens = true;
};

struct CompletionRequest {
  GenerationRequest gen;
  std::string prompt;                ///< the prompt as text, or
  std::vector<int32_t> prompt_ids;   ///< the prompt as token ids (then `prompt` is empty)
  /// Where the token ids are in the body, for a 400's param naming one: "prompt", or "prompt[0]"
  /// when they were sent as an array of one array (an id is then prompt[0][i]).
  std::string prompt_param = "prompt";
  bool has_ids() const { return !prompt_ids.empty(); }
};

/// A chat request, ready for the model's chat template (chat/chat_template.h).
struct ChatRequest {
  GenerationRequest gen;
  /// The messages as the template gets them: each message's fields as sent, except that `role`
  /// `developer` becomes `system` (OpenAI's newer name for it; templates know only `system`),
  /// `content` given as text parts becomes their non-empty texts joined with "\n" (vLLM's "string"
  /// content format; it does not pass the parts on, docs/server.md), an assistant's absent or
  /// null `content` (a message that carries `tool_calls`) becomes "" (as vLLM passes it), and an
  /// assistant's `tool_calls` reach the template as vLLM's _postprocess_messages leaves them: each
  /// `function.arguments` string parsed into the JSON value it encodes (absent, null or "": {}),
  /// and an empty or null `tool_calls` left out.
  /// Objects keep the order of their keys as sent (a template's tojson writes them in order).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  /// null, or the `tools` array as vLLM passes it to the template (each tool's model_dump()):
  /// every tool {"type": "function", "function": {"name", "description", "parameters"}} in that
  /// order, null for a field not sent, `strict` after them when sent, other fields left out.
  nlohmann::ordered_json tools;
  bool add_generation_prompt = true;                                          ///< vLLM's extension field
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  ///< `chat_template_kwargs` (vLLM's)
};

/// Parses a /v1/completions body. `prompt` is one prompt, as in OpenAI's API: a string, an array
/// of one string, an array of token ids, or an array of one array of token ids. Throws
/// RequestError for malformed JSON, a missing or empty `prompt`, a batch of prompts (an array of
/// several strings or id arrays), a token id that is not an integer in [0, 2^31) (naming
/// `prompt[i]`), or any field of the wrong type or range (the penalties and min_p in vLLM's
/// ranges). Ids are checked against the vocabulary by the engine (Engine::check_prompt). Fields
/// the server does not implement (logprobs, logit_bias, echo, suffix, best_of, ...) are a
/// RequestError unless absent, null or their default (refuse_unsupported_fields,
/// server/unsupported_fields.h).
CompletionRequest parse_completion_request(const std::string& body);

/// JSON text nested at most this many levels is parsed; deeper is refused before any copy of it
/// is made (a copy recurses once per level: 100,000 nested arrays in a `stop` field overflowed the
/// stack of the thread serving the request, and of `lg batch`).
inline constexpr int kMaxJsonDepth = 10000;

/// Parses `text` as JSON nested at most kMaxJsonDepth levels. Throws nlohmann::json::exception for
/// malformed JSON and RequestError (no param) for deeper nesting.
nlohmann::json parse_json_limited(const std::string& text);

/// A request body parsed as parse_json_limited does; RequestError (no param) for malformed JSON
/// ("the body is not valid JSON: ...") or a body that is not a JSON object.
nlohmann::json parse_body_object(const std::string& body);

/// nlohmann's message for a JSON error without its "[json.exception.parse_error.101] " prefix
/// (the library's internal id, which tells a client nothing): "parse error at line 1, column 5:
/// syntax error while parsing value - invalid literal; last read: 'tru}'" (a long token cut to
/// its tail: json_error_text).
std::string json_error_message(const nlohmann::json::exception& e);

/// Parses a /v1/chat/completions body. Throws RequestError for malformed JSON, missing or empty
/// `messages`, a message without a string `role` (system, developer, user, assistant, tool) or
/// `content` (a string, or an array of {"type": "text", "text": ...} parts; assistants may omit
/// it or send null), an assistant's `tool_calls` that is not an array of calls each with a
/// `function` object, or whose `function.arguments` is a string that is not JSON (named
/// `messages[i].tool_calls[j].function.arguments`), `tools` that is not an array of objects,
/// `chat_template_kwargs` that is not an object or names a variable the server sets, a message,
/// tool or kwarg nested deeper than kMaxChatNesting levels, any field of the wrong type or range,
/// or an unimplemented field (logprobs, logit_bias, response_format, a forced tool_choice, ...)
/// with a non-default value.
ChatRequest parse_chat_request(const std::string& body);

/// How deeply a message, tool or template kwarg may nest arrays/objects. Real tool schemas and
/// tool calls stay far below; Python's json and Jinja2 recurse per level (limit ~1000), so deeper
/// input is refused here with a 400 instead of failing inside the renderer.
constexpr size_t kMaxChatNesting = 64;

}  // namespace lg::server
