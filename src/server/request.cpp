#include "server/request.h"

#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/ordered_json.h"
#include "server/json_fields.h"
#include "server/sampling_fields.h"
#include "server/unsupported_fields.h"
#include "support/json_file.h"

namespace lg::server {

nlohmann::json parse_json_limited(const std::string& text) {
  const nlohmann::json::parser_callback_t limit = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth)
      throw RequestError("", "the JSON is nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    return true;
  };
  refuse_nul_byte(text);
  return nlohmann::json::parse(text, limit);
}

std::string json_error_message(const nlohmann::json::exception& e) { return json_error_text(e); }

nlohmann::json parse_body_object(const std::string& body) {
  nlohmann::json j;
  try {
    j = parse_json_limited(body);
  } catch (const nlohmann::json::exception& e) {
    // parse_error for broken syntax, out_of_range for a number beyond double (1e309): both are
    // the client's body, so a 400, not the 500 of an escaped exception.
    throw RequestError("", "the body is not valid JSON: " + json_error_message(e));
  }
  if (!j.is_object()) throw RequestError("", "the body must be a JSON object");
  return j;
}

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Log probabilities as each endpoint asks for them: completions `logprobs` N (0: the sampled
// token's alone), chat `logprobs` true with `top_logprobs` N. Up to kMaxTopLogprobs alternatives
// (OpenAI's limit on top_logprobs, vLLM's default max_logprobs). Chat's top_logprobs above 0
// without logprobs true is a 400, as vLLM answers it; 0 asks for nothing (clients send it).
void parse_logprobs(const json& j, bool chat, GenerationRequest& g) {
  const json* lp = field(j, "logprobs");
  const char* count_name = chat ? "top_logprobs" : "logprobs";
  const json* count = field(j, count_name);
  auto alternatives = [&] {
    const int64_t n = integer(*count, count_name);
    if (n < 0 || n > runtime::kMaxTopLogprobs)
      throw RequestError(count_name, fmt::format("'{}' must be in [0, {}], got {}", count_name,
                                                 runtime::kMaxTopLogprobs, n));
    return static_cast<int32_t>(n);
  };
  if (!chat) {
    if (lp) g.logprobs = alternatives();
    return;
  }
  if (lp && !lp->is_boolean())
    throw RequestError("logprobs", fmt::format("'logprobs' must be a boolean, got {}",
                                               lp->is_number() ? lp->dump() : lp->type_name()));
  const int32_t n = count ? alternatives() : 0;
  const bool asked = lp && lp->get<bool>();
  if (n > 0 && !asked) throw RequestError("top_logprobs", "'top_logprobs' needs 'logprobs' to be true");
  if (asked) g.logprobs = n;
}

GenerationRequest parse_common(const json& j, bool chat) {
  GenerationRequest g;
  if (const json* v = field(j, "model")) {
    if (!v->is_string()) throw RequestError("model", fmt::format("'model' must be a string, got {}", v->type_name()));
    // "" is the served model, as null is: vLLM takes any empty name so (its _is_model_supported),
    // and clients that leave a local server's model blank send it.
    if (!v->get_ref<const std::string&>().empty()) g.model = v->get<std::string>();
  }
  // Chat clients of the newer API send max_completion_tokens, which OpenAI's API (max_tokens is
  // deprecated there) and vLLM's chat endpoint take over max_tokens when a request has both.
  const char* max_name = "max_completion_tokens";
  const json* max = chat ? field(j, "max_completion_tokens") : nullptr;
  if (!max && (max = field(j, "max_tokens"))) max_name = "max_tokens";
  // The one that loses is still checked: a bad value is the client's mistake either way.
  if (const json* lost = max_name == std::string("max_completion_tokens") ? field(j, "max_tokens") : nullptr;
      lost && integer(*lost, "max_tokens") < 1)
    throw RequestError("max_tokens", fmt::format("'max_tokens' must be >= 1, got {}", lost->dump()));
  if (max) {
    const int64_t n = integer(*max, max_name);
    if (n < 1) throw RequestError(max_name, fmt::format("'{}' must be >= 1, got {}", max_name, n));
    g.max_tokens = n;
    g.max_tokens_field = max_name;
  }
  if (const json* v = field(j, "temperature")) {
    const double t = number(*v, "temperature");
    if (!(t >= 0)) throw RequestError("temperature", fmt::format("'temperature' must be >= 0, got {}", t));
    // As `lg run --temperature`: above this every token is about equally likely.
    if (t > 1e3)
      throw RequestError("temperature", fmt::format("'temperature' must be at most 1000 (higher is a uniform draw), got {}", t));
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
  parse_sampling_fields(j, g);
  if (const json* v = field(j, "seed")) {
    // Any 64-bit unsigned seed, as `lg run --seed` takes (a seed past 2^63 was refused here only),
    // and any negative 64-bit one, as OpenAI's API and vLLM take (its bits: -1 seeds as 2^64 - 1).
    if (v->is_number_unsigned()) {
      g.seed = v->get<uint64_t>();
    } else if (integral_float(*v) && v->get<double>() >= kTwo63 && v->get<double>() < kTwo64) {
      g.seed = static_cast<uint64_t>(v->get<double>());
    } else if (integral_float(*v) && (v->get<double>() >= kTwo64 || v->get<double>() <= -kTwo63)) {
      // An integer past them parsed as a double (2^64 reads 1.8446744073709552e+19, -2^63 - 1
      // reads -2^63 as a double, where -2^63 itself is an integer): say the range.
      // Below -2^63 the double's digits would read as -2^63 itself, in range: name the side.
      throw RequestError("seed", fmt::format("'seed' must be an integer in [-2^63, 2^64), got {}",
                                             v->get<double>() < 0 ? "one below -2^63" : number_text(*v)));
    } else {
      g.seed = static_cast<uint64_t>(integer(*v, "seed"));
    }
  }
  if (const json* v = field(j, "n")) {
    const int64_t n = integer(*v, "n");
    if (n < 1 || n > kMaxChoices)
      throw RequestError("n", fmt::format("'n' must be in [1, {}], got {}", kMaxChoices, n));
    g.n = n;
  }
  if (const json* v = field(j, "stop")) {
    std::vector<json> items;
    if (v->is_string()) items.push_back(*v);
    else if (v->is_array()) items.assign(v->begin(), v->end());
    else throw RequestError("stop", fmt::format("'stop' must be a string or an array of strings, got {}", v->type_name()));
    if (items.size() > 16) throw RequestError("stop", fmt::format("'stop' has {} strings, at most 16 are allowed", items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      // A single string is `stop` itself, not an element of an array the client never sent.
      const std::string name = v->is_string() ? "stop" : fmt::format("stop[{}]", i);
      if (!items[i].is_string()) throw RequestError(name, fmt::format("'{}' must be a string, got {}", name, items[i].type_name()));
      if (items[i].get_ref<const std::string&>().empty()) throw RequestError(name, fmt::format("'{}' is empty", name));
      g.stop.push_back(items[i].get<std::string>());
    }
  }
  if (const json* v = field(j, "stream")) {
    if (!v->is_boolean()) throw RequestError("stream", fmt::format("'stream' must be a boolean, got {}", v->type_name()));
    g.stream = v->get<bool>();
  }
  for (auto [name, flag] : {std::pair{"ignore_eos", &g.ignore_eos}, std::pair{"return_token_ids", &g.return_token_ids},
                            std::pair{"skip_special_tokens", &g.skip_special_tokens},
                            std::pair{"return_tokens_as_token_ids", &g.tokens_as_ids}}) {
    if (const json* v = field(j, name)) {
      if (!v->is_boolean()) throw RequestError(name, fmt::format("'{}' must be a boolean, got {}", name, v->type_name()));
      *flag = v->get<bool>();
    }
  }
  if (const json* v = field(j, "stream_options")) {
    if (!v->is_object()) throw RequestError("stream_options", "'stream_options' must be an object");
    if (const json* u = field(*v, "include_usage")) {
      if (!u->is_boolean()) throw RequestError("stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
      g.include_usage = u->get<bool>();
    }
    if (const json* c = field(*v, "continuous_usage_stats")) {
      if (!c->is_boolean())
        throw RequestError("stream_options.continuous_usage_stats",
                           fmt::format("'stream_options.continuous_usage_stats' must be a boolean, got {}", c->type_name()));
      // vLLM (should_include_usage) sends per-chunk usage only with include_usage, which defaults
      // to true inside its stream_options: absent here it is implied, so the request gets what
      // vLLM gives it. Sent false (or null, which vLLM reads as false), vLLM sends no usage at
      // all, per chunk or last: so does lg serve (this was a 400).
      if (v->find("include_usage") == v->end()) g.include_usage = c->get<bool>();
      g.continuous_usage_stats = c->get<bool>() && g.include_usage;
    }
    // Options of a stream that is not asked for: OpenAI's API and vLLM answer 400 rather than
    // drop them, so a client that set them and forgot `stream` hears of it.
    if (!g.stream)
      throw RequestError("stream_options", "'stream_options' is only allowed when 'stream' is true");
  }
  parse_logprobs(j, chat, g);
  // echo, logit_bias, best_of, ...: a value that would change the answer is refused, never
  // ignored (a 200 that silently answers another question).
  refuse_unsupported_fields(j, chat);
  return g;
}

// Checked per field, so the 400 names the one at fault.
bool chat_nesting_too_deep(const ordered_json& value) { return chat::nested_deeper_than(value, kMaxChatNesting); }

// One entry of `tools`, checked as OpenAI's API and vLLM (its ChatCompletionToolsParam) check it:
// `type` "function" (the default), a `function` object with a string `name`, and, when given, a
// string `description` and an object `parameters`. A tool without them was handed to the template
// as sent (Qwen3's wrote the nameless tool into the prompt, a 200), where those servers answer 400
// naming the field.
void check_tool(const ordered_json& tool, const std::string& at) {
  if (const ordered_json* type = field(tool, "type"); type && *type != "function")
    throw RequestError(at + ".type", fmt::format("'{}.type' must be \"function\", got {}", at, type->dump()));
  const ordered_json* fn = field(tool, "function");
  if (!fn || !fn->is_object())
    throw RequestError(at + ".function", fmt::format("'{}.function' must be an object naming the function ({{\"name\": "
                                                     "string, \"parameters\": JSON schema}}), got {}",
                                                     at, fn ? fn->type_name() : "nothing"));
  const ordered_json* name = field(*fn, "name");
  if (!name || !name->is_string())
    throw RequestError(at + ".function.name", fmt::format("'{}.function.name' must be a string, got {}", at,
                                                          name ? name->type_name() : "nothing"));
  if (const ordered_json* d = field(*fn, "description"); d && !d->is_string())
    throw RequestError(at + ".function.description",
                       fmt::format("'{}.function.description' must be a string, got {}", at, d->type_name()));
  if (const ordered_json* ps = field(*fn, "parameters"); ps && !ps->is_object())
    throw RequestError(at + ".function.parameters",
                       fmt::format("'{}.function.parameters' must be an object (a JSON schema), got {}", at, ps->type_name()));
  if (const ordered_json* st = field(*fn, "strict"); st && !st->is_boolean())
    throw RequestError(at + ".function.strict",
                       fmt::format("'{}.function.strict' must be a boolean, got {}", at, st->type_name()));
}

// One checked tool as vLLM hands it to the template: each is parsed into its pydantic model
// (ChatCompletionToolsParam, FunctionDefinition) and passed on as tool.model_dump(), so the
// template gets {"type", "function": {"name", "description", "parameters"}} in that order, with
// null for a description or parameters not sent, and `strict` after them when sent (a declared
// field of vLLM's current FunctionDefinition, dropped there when None; older vLLM kept it as an
// extra field, in the same place). Qwen3's template writes each tool with tojson: a tool sent
// without a description has "description": null in vLLM's prompt, and keys sent in another order
// come out in this one. Other fields are left out, as vLLM's current models drop them (older ones
// passed extras on after these). The parameters schema is kept as sent, its key order included
// (a dict in pydantic keeps it).
ordered_json template_tool(const ordered_json& tool) {
  const ordered_json& fn = tool.at("function");
  const auto or_null = [&](const char* key) {
    const ordered_json* v = field(fn, key);
    return v ? *v : ordered_json(nullptr);
  };
  ordered_json function = {{"name", fn.at("name")}, {"description", or_null("description")},
                           {"parameters", or_null("parameters")}};
  if (const ordered_json* st = field(fn, "strict")) function["strict"] = *st;
  return {{"type", "function"}, {"function", std::move(function)}};
}

// An assistant turn's `tool_calls` as vLLM hands them to the template (chat_utils.py,
// _postprocess_messages): each call's `function.arguments`, which OpenAI's API sends as a string
// of JSON, is parsed into the value it encodes, since templates (following transformers) expect
// the arguments as an object: Qwen2.5's and Llama 3.1's write `arguments | tojson`, which of a
// string is that string quoted again ("{\"a\": 1}"), and Qwen3's writes a string as it is, so
// the client's spacing ({"a":1}) reached the prompt where vLLM's has tojson's ({"a": 1}). Absent,
// null or "" arguments are {} (vLLM: a call without arguments). An argument string that is not
// JSON is a 400 naming it, as vLLM's releases answer (json.loads raises; vllm#43995, #47761);
// vLLM's current main (chat_utils.py) renders such a string as {} instead, a prompt about a call
// other than the one the client sent. An object or array sent in place of the string stays as it
// is (vLLM keeps them); another type is a 400. An empty list gives nullopt: vLLM drops
// `tool_calls: []` to keep templates on the plain assistant path (Qwen3's `{% if
// message.tool_calls %}` is false for [] anyway; a template testing `is defined` is not).
std::optional<ordered_json> template_tool_calls(const ordered_json& calls, const std::string& at) {
  if (!calls.is_array())
    throw RequestError(at, fmt::format("'{}' must be an array of tool calls, got {}", at, calls.type_name()));
  if (calls.empty()) return std::nullopt;
  ordered_json out = calls;
  for (size_t j = 0; j < out.size(); ++j) {
    const std::string cat = fmt::format("{}[{}]", at, j);
    ordered_json& call = out[j];
    if (!call.is_object())
      throw RequestError(cat, fmt::format("'{}' must be an object ({{\"id\", \"type\": \"function\", \"function\": "
                                          "{{\"name\", \"arguments\"}}}}), got {}",
                                          cat, call.type_name()));
    const auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object())
      throw RequestError(cat + ".function",
                         fmt::format("'{}.function' must be an object ({{\"name\": string, \"arguments\": JSON text}}), "
                                     "got {}",
                                     cat, fn == call.end() ? "nothing" : fn->type_name()));
    const std::string aat = cat + ".function.arguments";
    const auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null() || (args->is_string() && args->get_ref<const std::string&>().empty())) {
      (*fn)["arguments"] = ordered_json::object();
    } else if (args->is_string()) {
      try {
        *args = chat::parse_ordered_json(args->get_ref<const std::string&>(), kMaxChatNesting);
      } catch (const chat::JsonTooDeep&) {
        throw RequestError(aat, fmt::format("'{}' nests more than {} levels deep", aat, kMaxChatNesting));
      } catch (const ordered_json::exception& e) {
        throw RequestError(aat, fmt::format("'{}' is not valid JSON (the call's arguments, as a JSON string): {}", aat,
                                            json_error_message(e)));
      }
    } else if (!args->is_structured()) {
      throw RequestError(aat, fmt::format("'{}' must be a string of JSON (or an object), got {}", aat,
                                          args->type_name()));
    }
  }
  return out;
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body) {
  const json j = parse_body_object(body);
  CompletionRequest r;
  r.gen = parse_common(j, false);
  const json* p = field(j, "prompt");
  if (!p) throw RequestError("prompt", "'prompt' is required");
  // One prompt per request, in any of OpenAI's forms; a batch of prompts is not served.
  const auto is_prompt = [](const json& v) { return v.is_string() || (v.is_array() && !v.empty() && v[0].is_number()); };
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
    p = &(*p)[0];
    r.prompt_param = "prompt[0]";
  } else if (p->is_array() && p->size() > 1 && is_prompt((*p)[0]) && !(*p)[0].is_number())
    throw RequestError("prompt", fmt::format("'prompt' is an array of {} prompts; lg serve takes one prompt per request "
                                             "(a string, an array of token ids, or an array of one of those)",
                                             p->size()));
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
    if (r.prompt.empty()) throw RequestError("prompt", "'prompt' is empty");
    return r;
  }
  if (!p->is_array())
    throw RequestError("prompt", fmt::format("'prompt' must be a string or an array of token ids, got {}", p->type_name()));
  if (p->empty()) throw RequestError("prompt", "'prompt' is empty");
  r.prompt_ids.reserve(p->size());
  for (size_t i = 0; i < p->size(); ++i) {
    const json& id = (*p)[i];
    const std::string at = fmt::format("{}[{}]", r.prompt_param, i);
    if (!id.is_number_integer() && !integral_float(id))
      throw RequestError(at, fmt::format("'{}' must be a token id (an integer), got {}", at,
                                         id.is_number() ? id.dump() : id.type_name()));
    const double value = id.get<double>();  // exact for every id in range (below 2^31)
    if (!(value >= 0 && value <= INT32_MAX))
      throw RequestError(at, fmt::format("'{}' is not a token id: {}", at, id.dump()));
    r.prompt_ids.push_back(static_cast<int32_t>(value));
  }
  return r;
}

namespace {

/// messages[i] of a chat request, checked, as the chat template receives it: the role
/// (developer read as system), the content as one string (text parts joined), an assistant's
/// tool_calls with parsed arguments, the other fields as sent.
ordered_json template_message(const ordered_json& msg, size_t i) {
  const std::string at = fmt::format("messages[{}]", i);
  if (!msg.is_object()) throw RequestError(at, fmt::format("'{}' must be an object, got {}", at, msg.type_name()));
  const ordered_json* role = field(msg, "role");
  if (!role || !role->is_string()) throw RequestError(at + ".role", fmt::format("'{}.role' must be a string", at));
  std::string role_s = role->get<std::string>();
  if (role_s != "system" && role_s != "developer" && role_s != "user" && role_s != "assistant" && role_s != "tool")
    throw RequestError(at + ".role", fmt::format("'{}.role' must be system, developer, user, assistant or tool, got '{}'",
                                                 at, role_s));
  if (role_s == "developer") role_s = "system";
  const ordered_json* content = field(msg, "content");
  std::string text;
  if (!content) {
    // An assistant turn that only calls tools has no content (OpenAI sends null).
    if (role_s != "assistant")
      throw RequestError(at + ".content", fmt::format("'{}.content' is required (a string or an array of text parts; "
                                                      "null only for an assistant turn)",
                                                      at));
  } else if (content->is_string()) {
    text = content->get<std::string>();
  } else if (content->is_array()) {
    // The parts' texts joined with "\n", as vLLM's "string" content format joins them
    // (chat_utils.py, _parse_chat_message_content_parts), empty texts left out as it leaves them
    // out (a falsy part is not kept): ["a", "", "b"] is "a\nb". Concatenated, two paragraphs
    // sent as two parts ran together ("...end.Next..."), a prompt vLLM never renders.
    for (size_t k = 0; k < content->size(); ++k) {
      const ordered_json& part = (*content)[k];
      const std::string pat = fmt::format("{}.content[{}]", at, k);
      const ordered_json* type = part.is_object() ? field(part, "type") : nullptr;
      const ordered_json* t = part.is_object() ? field(part, "text") : nullptr;
      if (!type || *type != "text" || !t || !t->is_string())
        throw RequestError(pat, fmt::format("'{}' must be a {{\"type\": \"text\", \"text\": string}} part", pat));
      const std::string& part_text = t->get_ref<const std::string&>();
      if (part_text.empty()) continue;
      if (!text.empty()) text += '\n';  // every part kept so far is non-empty
      text += part_text;
    }
  } else {
    throw RequestError(at + ".content", fmt::format("'{}.content' must be a string or an array of text parts, got {}", at,
                                                    content->type_name()));
  }
  // A participant's name and a tool result's call id are strings in OpenAI's API (vLLM refuses
  // others); a template would print `name: 5` into the prompt.
  for (const char* key : {"name", "tool_call_id"})
    if (const ordered_json* v = field(msg, key); v && !v->is_string() && !v->is_null())
      throw RequestError(at + "." + key, fmt::format("'{}.{}' must be a string, got {}", at, key, v->type_name()));
  // The other fields (tool_calls, tool_call_id, name, reasoning_content, ...) go to the
  // template as sent: it decides what they mean.
  for (const auto& [key, value] : msg.items()) {
    if (key != "content" && chat_nesting_too_deep(value))
      throw RequestError(at + "." + key, fmt::format("'{}.{}' nests more than {} levels deep", at, key, kMaxChatNesting));
  }
  ordered_json out = msg;
  out["role"] = role_s;
  out["content"] = std::move(text);
  // vLLM passes an assistant's tool_calls only when not null, and with parsed arguments.
  if (const auto calls = out.find("tool_calls"); role_s == "assistant" && calls != out.end()) {
    std::optional<ordered_json> parsed;
    if (!calls->is_null()) parsed = template_tool_calls(*calls, at + ".tool_calls");
    if (parsed) {
      // Arguments parsed from a string nest below the call's own levels: the field's bound again.
      if (chat_nesting_too_deep(*parsed))
        throw RequestError(at + ".tool_calls",
                           fmt::format("'{}.tool_calls' nests more than {} levels deep", at, kMaxChatNesting));
      *calls = std::move(*parsed);
    } else {
      out.erase(calls);
    }
  }
  return out;
}

/// The request's tools (`t`, the field as sent), checked, as the chat template receives them.
ordered_json template_tools(const ordered_json* t) {
  if (!t->is_array()) throw RequestError("tools", fmt::format("'tools' must be an array, got {}", t->type_name()));
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string at = fmt::format("tools[{}]", i);
    if (!(*t)[i].is_object()) throw RequestError(at, fmt::format("'{}' must be an object, got {}", at, (*t)[i].type_name()));
    if (chat_nesting_too_deep((*t)[i]))
      throw RequestError(at, fmt::format("'{}' nests more than {} levels deep", at, kMaxChatNesting));
    check_tool((*t)[i], at);
  }
  ordered_json tools = ordered_json::array();
  for (const ordered_json& tool : *t) tools.push_back(template_tool(tool));
  return tools;
}

}  // namespace

ChatRequest parse_chat_request(const std::string& body) {
  ChatRequest r;
  r.gen = parse_common(parse_body_object(body), true);
  // Parsed again keeping the order of object keys, as Python's json does: the template sees the
  // messages and tools as the client wrote them (its tojson writes keys in that order). The
  // body already parsed above, so this cannot fail.
  const ordered_json j = chat::parse_ordered_json(body);
  const ordered_json* m = field(j, "messages");
  if (!m) throw RequestError("messages", "'messages' is required");
  if (!m->is_array()) throw RequestError("messages", fmt::format("'messages' must be an array, got {}", m->type_name()));
  if (m->empty()) throw RequestError("messages", "'messages' is empty");
  for (size_t i = 0; i < m->size(); ++i) r.messages.push_back(template_message((*m)[i], i));
  if (const ordered_json* t = field(j, "tools")) r.tools = template_tools(t);
  if (const ordered_json* a = field(j, "add_generation_prompt")) {
    if (!a->is_boolean())
      throw RequestError("add_generation_prompt", fmt::format("'add_generation_prompt' must be a boolean, got {}", a->type_name()));
    r.add_generation_prompt = a->get<bool>();
  }
  if (const ordered_json* k = field(j, "chat_template_kwargs")) {
    if (!k->is_object())
      throw RequestError("chat_template_kwargs", fmt::format("'chat_template_kwargs' must be an object, got {}", k->type_name()));
    for (const auto& [key, value] : k->items()) {
      const std::string at = "chat_template_kwargs." + key;
      if (chat::is_reserved_variable(key))
        throw RequestError(at, fmt::format("'{}' is set by the server (from the request's own fields); it cannot be a "
                                           "template kwarg",
                                           at));
      if (chat_nesting_too_deep(value))
        throw RequestError(at, fmt::format("'{}' nests more than {} levels deep", at, kMaxChatNesting));
    }
    r.template_kwargs = *k;
  }
  // OpenAI's reasoning_effort reaches the template as the variable of that name, as
  // transformers' apply_chat_template(reasoning_effort=...) passes it (gpt-oss's template reads
  // it; a template that does not is unchanged by it); chat_template_kwargs' own value wins.
  if (const ordered_json* e = field(j, "reasoning_effort"); e && !e->is_null()) {
    static constexpr const char* kEfforts[] = {"none", "minimal", "low", "medium", "high"};
    if (!e->is_string() || std::find(std::begin(kEfforts), std::end(kEfforts), e->get<std::string>()) == std::end(kEfforts))
      throw RequestError("reasoning_effort",
                         fmt::format("'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\" or \"high\", got {}",
                                     e->is_string() || e->is_number() ? e->dump() : std::string(e->type_name())));
    if (!r.template_kwargs.contains("reasoning_effort")) r.template_kwargs["reasoning_effort"] = *e;
  }
  return r;
}

}  // namespace lg::server
