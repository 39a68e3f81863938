#include "server/request.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace lg::server {

namespace {

using nlohmann::json;

json parse_object(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    // parse_error for broken syntax, out_of_range for a number beyond double (1e309): both are
    // the client's body, so a 400, not the 500 of an escaped exception.
    throw RequestError("", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw RequestError("", "the body must be a JSON object");
  return j;
}

// JSON null counts as absent, as OpenAI clients send explicit nulls for defaults.
const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& v, const char* name) {
  if (!v.is_number()) throw RequestError(name, fmt::format("'{}' must be a number, got {}", name, v.type_name()));
  return v.get<double>();
}

int64_t integer(const json& v, const char* name) {
  if (!v.is_number_integer())
    throw RequestError(name, fmt::format("'{}' must be an integer, got {}", name, v.is_number() ? v.dump() : v.type_name()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw RequestError(name, fmt::format("'{}' is too large: {}", name, v.dump()));
  return v.get<int64_t>();
}

GenerationRequest parse_common(const json& j, bool chat) {
  GenerationRequest g;
  if (const json* v = field(j, "model")) {
    if (!v->is_string()) throw RequestError("model", fmt::format("'model' must be a string, got {}", v->type_name()));
    g.model = v->get<std::string>();
  }
  // Chat clients of the newer API send max_completion_tokens; it means the same.
  const char* max_name = "max_tokens";
  const json* max = field(j, "max_tokens");
  if (!max && chat && (max = field(j, "max_completion_tokens"))) max_name = "max_completion_tokens";
  if (max) {
    const int64_t n = integer(*max, max_name);
    if (n < 1) throw RequestError(max_name, fmt::format("'{}' must be >= 1, got {}", max_name, n));
    g.max_tokens = n;
  }
  if (const json* v = field(j, "temperature")) {
    const double t = number(*v, "temperature");
    if (!(t >= 0)) throw RequestError("temperature", fmt::format("'temperature' must be >= 0, got {}", t));
    g.temperature = t;
  }
  if (const json* v = field(j, "top_p")) {
    const double p = number(*v, "top_p");
    if (!(p > 0 && p <= 1)) throw RequestError("top_p", fmt::format("'top_p' must be in (0, 1], got {}", p));
    g.top_p = p;
  }
  if (const json* v = field(j, "top_k")) {
    const int64_t k = integer(*v, "top_k");
    if (k < -1) throw RequestError("top_k", fmt::format("'top_k' must be >= 0 (or -1 for off), got {}", k));
    g.top_k = k < 0 ? 0 : k;
  }
  if (const json* v = field(j, "seed")) {
    const int64_t s = integer(*v, "seed");
    if (s < 0) throw RequestError("seed", fmt::format("'seed' must be >= 0, got {}", s));
    g.seed = static_cast<uint64_t>(s);
  }
  if (const json* v = field(j, "n")) {
    if (integer(*v, "n") != 1) throw RequestError("n", "'n' must be 1: lg serve returns one choice per request");
  }
  if (const json* v = field(j, "stop")) {
    std::vector<json> items;
    if (v->is_string()) items.push_back(*v);
    else if (v->is_array()) items.assign(v->begin(), v->end());
    else throw RequestError("stop", fmt::format("'stop' must be a string or an array of strings, got {}", v->type_name()));
    if (items.size() > 16) throw RequestError("stop", fmt::format("'stop' has {} strings, at most 16 are allowed", items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string name = fmt::format("stop[{}]", i);
      if (!items[i].is_string()) throw RequestError(name, fmt::format("'{}' must be a string, got {}", name, items[i].type_name()));
      if (items[i].get_ref<const std::string&>().empty()) throw RequestError(name, fmt::format("'{}' is empty", name));
      g.stop.push_back(items[i].get<std::string>());
    }
  }
  if (const json* v = field(j, "stream")) {
    if (!v->is_boolean()) throw RequestError("stream", fmt::format("'stream' must be a boolean, got {}", v->type_name()));
    g.stream = v->get<bool>();
  }
  if (const json* v = field(j, "stream_options")) {
    if (!v->is_object()) throw RequestError("stream_options", "'stream_options' must be an object");
    if (const json* u = field(*v, "include_usage")) {
      if (!u->is_boolean()) throw RequestError("stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
      g.include_usage = u->get<bool>();
    }
  }
  return g;
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body) {
  const json j = parse_object(body);
  CompletionRequest r;
  r.gen = parse_common(j, false);
  const json* p = field(j, "prompt");
  if (!p) throw RequestError("prompt", "'prompt' is required");
  // OpenAI also takes a one-element array of strings; batches of prompts are not served (batch 1).
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
  if (p->is_array() && p->size() > 1)
    throw RequestError("prompt", fmt::format("'prompt' is an array of {} prompts; lg serve takes one prompt per request "
                                             "(a string, or an array of one string)",
                                             p->size()));
  if (!p->is_string())
    throw RequestError("prompt", fmt::format("'prompt' must be a string or an array of one string, got {}", p->type_name()));
  r.prompt = p->get<std::string>();
  if (r.prompt.empty()) throw RequestError("prompt", "'prompt' is empty");
  return r;
}

ChatRequest parse_chat_request(const std::string& body) {
  const json j = parse_object(body);
  ChatRequest r;
  r.gen = parse_common(j, true);
  const json* m = field(j, "messages");
  if (!m) throw RequestError("messages", "'messages' is required");
  if (!m->is_array()) throw RequestError("messages", fmt::format("'messages' must be an array, got {}", m->type_name()));
  if (m->empty()) throw RequestError("messages", "'messages' is empty");
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string at = fmt::format("messages[{}]", i);
    if (!msg.is_object()) throw RequestError(at, fmt::format("'{}' must be an object, got {}", at, msg.type_name()));
    const json* role = field(msg, "role");
    if (!role || !role->is_string()) throw RequestError(at + ".role", fmt::format("'{}.role' must be a string", at));
    const std::string role_s = role->get<std::string>();
    if (role_s != "system" && role_s != "user" && role_s != "assistant" && role_s != "tool")
      throw RequestError(at + ".role", fmt::format("'{}.role' must be system, user, assistant or tool, got '{}'", at, role_s));
    const json* content = field(msg, "content");
    if (!content) throw RequestError(at + ".content", fmt::format("'{}.content' is required", at));
    std::string text;
    if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {
      for (size_t k = 0; k < content->size(); ++k) {
        const json& part = (*content)[k];
        const std::string pat = fmt::format("{}.content[{}]", at, k);
        const json* type = part.is_object() ? field(part, "type") : nullptr;
        const json* t = part.is_object() ? field(part, "text") : nullptr;
        if (!type || *type != "text" || !t || !t->is_string())
          throw RequestError(pat, fmt::format("'{}' must be a {{\"type\": \"text\", \"text\": string}} part", pat));
        text += t->get<std::string>();
      }
    } else {
      throw RequestError(at + ".content", fmt::format("'{}.content' must be a string or an array of text parts, got {}", at,
                                                      content->type_name()));
    }
    r.messages.push_back({role_s, std::move(text)});
  }
  return r;
}

}  // namespace lg::server
