#include "server/tokenize.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "chat/ordered_json.h"
#include "server/json_fields.h"
#include "server/openai.h"
#include "server/request.h"

namespace lg::server {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// A `model` naming another model is a 404 before anything else is read, as for generation.
void check_model_field(const Engine& engine, const json& j) {
  const json* m = field(j, "model");
  if (!m) return;
  if (!m->is_string()) throw RequestError("model", fmt::format("'model' must be a string, got {}", m->type_name()));
  const auto& name = m->get_ref<const std::string&>();
  if (!name.empty() && !engine.serves(name)) throw ModelNotFound("model", model_not_found(engine, name));
}

bool flag(const json& j, const char* name, bool fallback) {
  const json* v = field(j, name);
  if (!v) return fallback;
  if (!v->is_boolean()) throw RequestError(name, fmt::format("'{}' must be a boolean, got {}", name, v->type_name()));
  return v->get<bool>();
}

const tokenizer::Tokenizer& tokenizer_of(const Engine& engine, const char* what, const char* param) {
  if (!engine.has_tokenizer())
    throw RequestError(param, fmt::format("{} needs a tokenizer; the model '{}' is served without one (random weights, or "
                                       "no tokenizer.json)",
                                       what, engine.model_id()));
  return engine.tokenizer();
}

}  // namespace

ordered_json tokenize_body(const Engine& engine, const chat::ChatTemplate& tmpl, const std::string& body) {
  const json j = parse_body_object(body);
  check_model_field(engine, j);
  const bool chat = field(j, "messages") != nullptr;
  if (chat && field(j, "prompt"))
    throw RequestError("prompt", "'prompt' and 'messages' cannot both be given: a body is vLLM's completion form or its chat form");
  // vLLM's defaults: a completion prompt gets the model's special tokens, a rendered chat prompt
  // is encoded as the template wrote it (it holds them already).
  const bool special = flag(j, "add_special_tokens", !chat);
  const bool strs = flag(j, "return_token_strs", false);
  const tokenizer::Tokenizer& tok = tokenizer_of(engine, "/tokenize", chat ? "messages" : "prompt");
  std::string text;
  if (chat) {
    // The chat endpoint's own parsing and rendering (the same 400s), without the fields only
    // /tokenize has (the chat endpoint refuses add_special_tokens: true).
    ordered_json rest = chat::parse_ordered_json(body);
    rest.erase("add_special_tokens");
    rest.erase("return_token_strs");
    text = render_chat(tmpl, parse_chat_request(rest.dump()));
  } else {
    const json* p = field(j, "prompt");
    if (!p) throw RequestError("prompt", "'prompt' or 'messages' is required");
    if (!p->is_string())
      throw RequestError("prompt", fmt::format("'prompt' must be a string (the text to tokenize), got {}", p->type_name()));
    text = p->get<std::string>();
  }
  std::vector<int32_t> ids;
  try {
    ids = special ? tok.encode_with_special_tokens(text) : tok.encode(text);
  } catch (const Error& e) {
    const char* param = chat ? "messages" : "prompt";
    throw RequestError(param, fmt::format("'{}' cannot be tokenized: {}", param, e.what()));
  }
  ordered_json token_strs = nullptr;
  if (strs) {
    token_strs = ordered_json::array();
    for (int32_t id : ids) token_strs.push_back(tok.id_to_token(id).value_or(""));
  }
  return {{"count", ids.size()}, {"max_model_len", engine.context()}, {"tokens", ids}, {"token_strs", token_strs}};
}

ordered_json detokenize_body(const Engine& engine, const std::string& body) {
  const json j = parse_body_object(body);
  check_model_field(engine, j);
  const json* t = field(j, "tokens");
  if (!t) throw RequestError("tokens", "'tokens' is required (the token ids to decode)");
  if (!t->is_array()) throw RequestError("tokens", fmt::format("'tokens' must be an array of token ids, got {}", t->type_name()));
  const tokenizer::Tokenizer& tok = tokenizer_of(engine, "/detokenize", "tokens");
  const int64_t V = engine.vocab_size();
  std::vector<int32_t> ids;
  ids.reserve(t->size());
  for (size_t i = 0; i < t->size(); ++i) {
    const json& v = (*t)[i];
    const std::string at = fmt::format("tokens[{}]", i);
    // As a completion's token-id prompt reads them: 5.0 is 5.
    const double value = v.is_number_integer() || integral_float(v) ? v.get<double>() : -1;
    if (!(value >= 0 && value < static_cast<double>(V)))
      throw RequestError(at, fmt::format("'{}' must be a token id, an integer in [0, {}), got {}", at, V,
                                         v.is_number() ? v.dump() : std::string(v.type_name())));
    ids.push_back(static_cast<int32_t>(value));
  }
  return {{"prompt", tok.decode(ids)}};
}

}  // namespace lg::server
