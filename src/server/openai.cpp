#include "server/openai.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>

#include "server/logprobs_json.h"
#include "support/error.h"

namespace lg::server {

using nlohmann::json;
using nlohmann::ordered_json;

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
// "cmpl-" / "chatcmpl-" and 32 random hex digits, as vLLM's and OpenAI's ids: unique across
// requests and restarts, and saying nothing of the server's load (a clock and a counter did).
std::string new_id(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device(), device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  uint64_t hi = 0, lo = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    hi = rng();
    lo = rng();
  }
  return fmt::format("{}-{:016x}{:016x}", prefix, hi, lo);
}

// A request for another model is a 404 before its prompt is read (tokenized, rendered, measured
// against the context), as vLLM checks the model first: that is the mistake to tell the client of.
void check_model(const Engine& engine, const GenerationRequest& gen) {
  if (gen.model && !engine.serves(*gen.model)) throw ModelNotFound("model", model_not_found(engine, *gen.model));
}
}  // namespace

std::string model_not_found(const Engine& engine, const std::string& name) {
  const std::vector<std::string> names = engine.served_names();
  std::string served;
  for (const std::string& n : names) served += (served.empty() ? "'" : ", '") + n + "'";
  // Said by lg serve and lg batch alike (a batch file written for another server names its model).
  return fmt::format("The model '{}' does not exist; the names served here are {} (--served-model-name sets them)",
                     name, served);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

json error_body(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error",
           {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", nullptr}}}};
}

ordered_json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

ordered_json usage_json(const EngineResult& r) { return usage_json(r.prompt_tokens, r.completion_tokens); }

ordered_json usage_json(std::span<const EngineResult> choices) {
  int64_t completion = 0;
  for (const EngineResult& r : choices) completion += r.completion_tokens;
  return usage_json(choices.empty() ? 0 : choices.front().prompt_tokens, completion);
}

std::string render_chat(const chat::ChatTemplate& tmpl, const ChatRequest& r) {
  chat::ChatInput in;
  in.messages = r.messages;
  in.tools = r.tools;
  in.add_generation_prompt = r.add_generation_prompt;
  in.kwargs = r.template_kwargs;
  try {
    return tmpl.render(in);
  } catch (const chat::ChatTemplateError& e) {
    using K = chat::ChatTemplateError::Kind;
    if (e.kind() == K::missing) throw RequestError("messages", std::string("'messages' cannot be rendered: ") + e.what());
    if (e.kind() == K::failed)
      throw RequestError("messages", std::string("'messages' is refused by the model's chat template: ") + e.what());
    if (e.kind() == K::too_large) throw RequestError("messages", std::string("'messages' is too large: ") + e.what());
    // broken template, timeout, no renderer: the server's fault, a 500.
    throw Error(std::string("the chat template could not be rendered: ") + e.what());
  }
}

PreparedRequest prepare_request(const Engine& engine, const chat::ChatTemplate& tmpl, Endpoint kind,
                                const std::string& body) {
  PreparedRequest p;
  p.kind = kind;
  p.created = now_unix();
  p.model = engine.model_id();
  if (kind == Endpoint::completion) {
    CompletionRequest r = parse_completion_request(body);
    check_model(engine, r.gen);
    p.gen = std::move(r.gen);
    if (r.has_ids()) {
      // Token ids are the model's input as given: no special tokens are added (as vLLM).
      engine.check_prompt(r.prompt_ids, r.prompt_param);
      p.prompt_ids = std::move(r.prompt_ids);
    } else {
      p.prompt_ids = engine.encode_prompt(r.prompt, "prompt", /*add_special_tokens=*/true);
    }
  } else {
    ChatRequest r = parse_chat_request(body);
    check_model(engine, r.gen);
    if (!engine.has_tokenizer())
      throw RequestError("messages", fmt::format("chat needs a tokenizer and a chat template; the model '{}' is served "
                                                 "without them (random weights, or no tokenizer.json): send token ids "
                                                 "to /v1/completions",
                                                 engine.model_id()));
    p.gen = std::move(r.gen);
    p.prompt_ids = engine.encode_prompt(render_chat(tmpl, r), "messages");
  }
  // Answers carry the name the request gave when it is one of --served-model-name's, as vLLM's
  // do; otherwise (none given, or the model directory's path) the id.
  if (const std::vector<std::string> names = engine.served_names();
      p.gen.model && std::find(names.begin(), names.end(), *p.gen.model) != names.end())
    p.model = *p.gen.model;
  if (!engine.has_tokenizer() && !p.gen.stop.empty())
    throw RequestError("stop", "'stop' needs a tokenizer to match text; this model is served without one");
  engine.check_max_tokens(static_cast<int64_t>(p.prompt_ids.size()), p.gen);
  p.token_ids = p.gen.return_token_ids || !engine.has_tokenizer();
  if (engine.has_tokenizer() && !p.gen.tokens_as_ids) p.tokenizer = &engine.tokenizer();
  // OpenAI's completions default is 16 tokens (vLLM's too, whatever the generation config says);
  // chat runs to generation_config.json's max_new_tokens, else to eos or the end of the context.
  p.default_max = kind == Endpoint::completion ? 16 : 0;
  engine.check_sampling(static_cast<int64_t>(p.prompt_ids.size()), p.gen, p.default_max);
  // Each choice is a sequence: more than the batch and the waiting queue hold together would be a
  // 503 on an idle server, which a client retries forever.
  // (lg batch waits without a limit: max_waiting is INT64_MAX there.)
  if (p.gen.n > engine.limits().max_batch && p.gen.n - engine.limits().max_batch > engine.max_waiting())
    throw RequestError("n", fmt::format("'n' is {}, more choices than this server holds at once ({} running "
                                        "(--max-batch) and {} waiting (--max-waiting))",
                                        p.gen.n, engine.limits().max_batch, engine.max_waiting()));
  p.id = new_id(kind == Endpoint::chat ? "chatcmpl" : "cmpl");
  return p;
}

ordered_json choice_logprobs(const PreparedRequest& p, std::span<const runtime::TokenLogprobs> tokens,
                             int64_t& text_offset) {
  if (p.gen.logprobs < 0) return nullptr;
  return p.kind == Endpoint::chat ? chat_logprobs(p.tokenizer, tokens)
                                   : completion_logprobs(p.tokenizer, tokens, p.gen.skip_special_tokens, text_offset);
}

ordered_json stop_reason_json(const EngineResult& r) {
  if (r.stop_string) return *r.stop_string;
  if (r.stop_token) return *r.stop_token;
  return nullptr;
}

ordered_json response_body(const PreparedRequest& p, std::span<const EngineResult> choices) {
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const EngineResult& r = choices[i];
    int64_t text_offset = 0;
    ordered_json choice = {{"index", i}};
    if (p.kind == Endpoint::chat) choice["message"] = {{"role", "assistant"}, {"content", r.text}, {"refusal", nullptr}};
    else choice["text"] = r.text;
    choice["logprobs"] = choice_logprobs(p, r.logprobs, text_offset);
    choice["finish_reason"] = r.finish_reason;
    choice["stop_reason"] = stop_reason_json(r);
    // refusal null (above), as OpenAI's ChatCompletionMessage always carries it (and vLLM's):
    // clients that validate the schema find it.
    if (p.token_ids) choice["token_ids"] = r.token_ids;
    out.push_back(std::move(choice));
  }
  return {{"id", p.id},
          {"object", p.kind == Endpoint::chat ? "chat.completion" : "text_completion"},
          {"created", p.created},
          {"model", p.model},
          {"choices", std::move(out)},
          {"usage", usage_json(choices)}};
}

}  // namespace lg::server
