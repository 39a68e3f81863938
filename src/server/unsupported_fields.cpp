#include "server/unsupported_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "server/request.h"

namespace lg::server {

namespace {

using nlohmann::json;

// The type a field must have, and which of its values is the default (the answer lg serve gives).
enum class Kind {
  flag,             // boolean; false
  flag_true,        // boolean; true
  count_from_one,   // integer >= 1; 1
  count_asks,       // integer >= 0; only null (absent) is the default: 0 asks too (logprobs: 0 is the
                    // sampled token's logprob in OpenAI's API and vLLM, prompt_logprobs: 0 the prompt's)
  string_empty,     // string; ""
  array_empty,      // array; []
  response_format,  // {"type": string}; {"type": "text"}
  tool_choice,      // "none" | "auto" | "required" | {"type": "function", ...}; "none" or "auto"
  text_only,        // array of strings; only "text" in it (modalities: ["text"])
  anything,         // any value asks for the feature; only null (absent) is accepted
};

enum Scope { completion = 1, chat = 2, both = 3 };

struct Rule {
  const char* name;
  Scope scope;
  Kind kind;
  const char* why;  // what lg serve does instead, for the error message
};

// OpenAI's fields first (API reference, completions and chat completions), then vLLM's extensions
// that change the answer (vLLM's protocol.py). Types and defaults are OpenAI's / vLLM's.
constexpr Rule kRules[] = {
    {"echo", both, Kind::flag, "the answer does not repeat the prompt"},
    {"suffix", completion, Kind::string_empty, "there is no fill-in-the-middle insertion"},
    {"best_of", completion, Kind::count_from_one, "no choices are generated to be ranked and dropped (send n for several)"},
    {"response_format", both, Kind::response_format, "the output is not constrained to a format"},
    {"tool_choice", chat, Kind::tool_choice, "tool calls are neither forced nor parsed; the reply is text"},
    {"function_call", chat, Kind::tool_choice, "tool calls are neither forced nor parsed; the reply is text"},
    {"functions", chat, Kind::array_empty, "the deprecated 'functions' are not given to the model; send 'tools'"},
    // vLLM's extensions
    {"include_stop_str_in_output", both, Kind::flag, "the text is always cut before the stop string"},
    {"use_beam_search", both, Kind::flag, "there is no beam search"},
    {"prompt_logprobs", both, Kind::count_asks, "log probabilities are computed for generated tokens only"},
    {"allowed_token_ids", both, Kind::array_empty, "the vocabulary is not restricted"},
    {"bad_words", both, Kind::array_empty, "the vocabulary is not restricted"},
    {"guided_json", both, Kind::anything, "the output is not constrained"},
    {"guided_regex", both, Kind::anything, "the output is not constrained"},
    {"guided_choice", both, Kind::anything, "the output is not constrained"},
    {"guided_grammar", both, Kind::anything, "the output is not constrained"},
    {"structured_outputs", both, Kind::anything, "the output is not constrained"},
    {"truncate_prompt_tokens", both, Kind::anything, "prompts are not truncated (one longer than the context is a 400)"},
    {"continue_final_message", chat, Kind::flag, "the reply is a new assistant turn (add_generation_prompt)"},
    // The prompt as vLLM would build it otherwise: another template, documents given to it, or
    // special tokens added around (completions: taken away from) the text.
    {"chat_template", chat, Kind::anything, "the model's chat template renders every request (lg serve --chat-template sets it)"},
    {"documents", chat, Kind::anything, "the chat template gets no documents"},
    {"add_special_tokens", completion, Kind::flag_true, "a text prompt gets the special tokens the model expects"},
    {"add_special_tokens", chat, Kind::flag, "the rendered chat prompt is encoded as the template wrote it"},
    {"modalities", chat, Kind::text_only, "the reply is text"},
    {"audio", chat, Kind::anything, "the reply is text, never audio"},
};

const char* default_text(Kind k) {
  switch (k) {
    case Kind::flag: return "false";
    case Kind::flag_true: return "true";
    case Kind::count_from_one: return "1";
    case Kind::string_empty: return "\"\"";
    case Kind::array_empty: return "[]";
    case Kind::response_format: return "{\"type\": \"text\"}";
    case Kind::tool_choice: return "\"auto\" or \"none\"";
    case Kind::text_only: return "[\"text\"]";
    case Kind::count_asks: case Kind::anything: return "null";
  }
  return "null";
}

[[noreturn]] void wrong_type(const std::string& name, const char* expected, const json& v) {
  throw RequestError(name, fmt::format("'{}' must be {}, got {}", name, expected,
                                       v.is_number() ? v.dump() : std::string(v.type_name())));
}

// Checks the type of `v` for the rule; returns true when it is the default value.
bool is_default(const Rule& r, const json& v) {
  const std::string name = r.name;
  switch (r.kind) {
    case Kind::flag:
    case Kind::flag_true:
      if (!v.is_boolean()) wrong_type(name, "a boolean", v);
      return v.get<bool>() == (r.kind == Kind::flag_true);
    case Kind::count_asks:
    case Kind::count_from_one: {
      const int64_t least = r.kind == Kind::count_from_one ? 1 : 0;
      const char* expected = r.kind == Kind::count_from_one ? "an integer >= 1" : "an integer >= 0";
      if (r.kind == Kind::count_asks) {  // typed as a count; every value asks for the feature
        const bool count = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0) ||
                           (v.is_number_float() && std::isfinite(v.get<double>()) &&
                            v.get<double>() == std::trunc(v.get<double>()) && v.get<double>() >= 0);
        if (!count) wrong_type(name, expected, v);
        return false;
      }
      // An integral float (0.0) is that integer, as in every integer field (request.cpp).
      if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!(std::isfinite(d) && d == std::trunc(d) && d >= static_cast<double>(least))) wrong_type(name, expected, v);
        return d == static_cast<double>(least);
      }
      if (!v.is_number_integer()) wrong_type(name, expected, v);
      // json keeps a non-negative integer unsigned (it may be beyond int64), a negative one signed.
      if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() < static_cast<uint64_t>(least)) wrong_type(name, expected, v);
        return v.get<uint64_t>() == static_cast<uint64_t>(least);
      }
      if (v.get<int64_t>() < least) wrong_type(name, expected, v);
      return v.get<int64_t>() == least;
    }
    case Kind::string_empty:
      if (!v.is_string()) wrong_type(name, "a string", v);
      return v.get_ref<const std::string&>().empty();
    case Kind::array_empty:
      if (!v.is_array()) wrong_type(name, "an array", v);
      return v.empty();
    case Kind::response_format: {
      if (!v.is_object()) wrong_type(name, "an object", v);
      auto t = v.find("type");
      if (t == v.end() || !t->is_string())
        throw RequestError(name + ".type", fmt::format("'{}.type' must be a string (\"text\", \"json_object\", "
                                                       "\"json_schema\")",
                                                       name));
      return *t == "text";
    }
    case Kind::tool_choice:
      if (v.is_object()) return false;  // {"type": "function", "function": {"name": ...}}: a forced call
      if (!v.is_string() || (v != "none" && v != "auto" && v != "required"))
        throw RequestError(name, fmt::format("'{}' must be \"none\", \"auto\", \"required\" or an object naming a "
                                             "function, got {}",
                                             name, v.is_string() || v.is_number() ? v.dump() : std::string(v.type_name())));
      return v != "required";
    case Kind::text_only:
      if (!v.is_array()) wrong_type(name, "an array", v);
      for (const json& m : v)
        if (!m.is_string()) wrong_type(name, "an array of strings", v);
      return std::all_of(v.begin(), v.end(), [](const json& m) { return m == "text"; });
    case Kind::anything: return false;
  }
  return false;
}

}  // namespace

void refuse_unsupported_fields(const json& body, bool is_chat) {
  for (const Rule& r : kRules) {
    if (!(r.scope & (is_chat ? chat : completion))) continue;
    auto it = body.find(r.name);
    if (it == body.end() || it->is_null()) continue;  // null: absent, as OpenAI clients send defaults
    if (is_default(r, *it)) continue;
    throw RequestError(r.name, fmt::format("'{}' is not supported by lg serve or lg batch ({}); leave it out or send {}", r.name,
                                           r.why, default_text(r.kind)));
  }
}

}  // namespace lg::server
