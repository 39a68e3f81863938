// lg serve end to end: the server runs in-process on an ephemeral 127.0.0.1 port with the cpu lane
// on the repo's 22M model; httplib's client calls it. Greedy completions are checked against the
// transformers fp32 greedy tokens of shared/fixtures/qwen3-pycode-22m-golden.json.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include "common/model_copy.h"
#include "common/raw_http.h"
#include "served_model.h"
#include "server/server.h"
#include "support/error.h"

namespace {

using nlohmann::json;
using namespace lg::server;

constexpr int64_t kContext = 256;

struct Golden {
  std::string prompt;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

Golden first_golden() {
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/qwen3-pycode-22m-golden.json");
  const json j = json::parse(f);
  const json& c = j.at("cases").at(0);
  return {c.at("prompt").get<std::string>(), c.at("prompt_ids").get<std::vector<int32_t>>(),
          c.at("fp32_cpu_greedy_ids").get<std::vector<int32_t>>()};
}

// One SSE stream split into its `data:` payloads.
std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at byte " << pos;
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

class ServerTest : public lg::test::ServedModel {
 protected:
  static void SetUpTestSuite() {
    EngineOptions eo;
    eo.max_seq = kContext;
    serve(eo);
  }

  static httplib::Result post(const std::string& path, const std::string& body, int port = port_) {
    return client(port).Post(path.c_str(), body, "application/json");
  }
  static json post_ok(const std::string& path, const json& body, int port = port_) {
    auto r = post(path, body.dump(), port);
    EXPECT_TRUE(r) << "no response";
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  // The concatenated text of a stream and its last finish_reason; checks the SSE framing.
  static std::pair<std::string, std::string> post_stream(const std::string& path, json body, json* usage = nullptr,
                                                         int port = port_) {
    body["stream"] = true;
    auto r = post(path, body.dump(), port);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    const auto events = sse_events(r->body);
    EXPECT_GE(events.size(), 3u);
    if (events.empty()) return {};
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text, finish;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      const json ev = json::parse(events[i]);
      if (ev.contains("usage") && ev["choices"].empty()) {
        if (usage) *usage = ev["usage"];
        continue;
      }
      EXPECT_TRUE(finish.empty()) << "a chunk after the finish_reason: " << events[i];
      const json& ch = ev.at("choices").at(0);
      if (path == "/v1/chat/completions") {
        EXPECT_EQ(ev["object"], "chat.completion.chunk");
        text += ch["delta"].value("content", "");
      } else {
        EXPECT_EQ(ev["object"], "text_completion");
        text += ch.at("text").get<std::string>();
      }
      if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
    return {text, finish};
  }
  static void expect_400(const std::string& path, const std::string& body, const std::string& param,
                         const std::string& in_message = "") {
    auto r = post(path, body);
    ASSERT_TRUE(r) << body;
    EXPECT_EQ(r->status, 400) << body << " -> " << r->body;
    json j;
    ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    if (param.empty()) {
      EXPECT_TRUE(j["error"]["param"].is_null()) << r->body;
    } else {
      EXPECT_EQ(j["error"]["param"], param) << body;
      EXPECT_NE(j["error"]["message"].get<std::string>().find(param), std::string::npos) << r->body;
    }
    if (!in_message.empty()) {
      EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r->body;
    }
  }

};

TEST_F(ServerTest, HealthAndModels) {
  auto h = client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  const json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "qwen3-pycode-22m");
  EXPECT_EQ(j["data"][0]["max_model_len"], kContext);
}

TEST_F(ServerTest, GreedyCompletionMatchesTransformers) {
  const Golden g = first_golden();
  ASSERT_EQ(engine_->tokenizer().encode(g.prompt), g.prompt_ids);
  const std::vector<int32_t> first16(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  const std::string want = engine_->tokenizer().decode(first16);
  const json r = post_ok("/v1/completions", {{"model", "qwen3-pycode-22m"}, {"prompt", g.prompt}, {"max_tokens", 16}, {"temperature", 0}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], want);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], g.prompt_ids.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 16);
  EXPECT_EQ(r["usage"]["total_tokens"], g.prompt_ids.size() + 16);
}

TEST_F(ServerTest, ModelById) {
  auto m = client().Get("/v1/models/qwen3-pycode-22m");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(json::parse(m->body)["id"], "qwen3-pycode-22m");
  EXPECT_EQ(json::parse(m->body)["max_model_len"], kContext);
  auto other = client().Get("/v1/models/gpt-4");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(json::parse(other->body)["error"]["param"], "model");
  auto post = client().Post("/v1/models/qwen3-pycode-22m", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
  // The model directory as it was given (vLLM's default served name is the path), with a
  // trailing slash too: the same model.
  const std::string path = std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m";
  for (const std::string& name : {path, path + "/"}) {
    const json r = post_ok("/v1/completions", {{"model", name}, {"prompt", "def"}, {"max_tokens", 1}});
    EXPECT_EQ(r["model"], "qwen3-pycode-22m") << name;
  }
  auto by_path = client().Get(("/v1/models/" + path).c_str());
  ASSERT_TRUE(by_path);
  EXPECT_EQ(by_path->status, 200) << by_path->body;
}

// --served-model-name: requests must give one of the names (the first is the id answers carry),
// and the directory's own name is then refused, as vLLM does.
TEST(EngineServedNames, TheFirstIsTheIdAndOnlyTheyAreServed) {
  EngineOptions eo;
  eo.max_seq = 64;
  eo.served_model_names = {"coder", "coder-v2"};
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
  EXPECT_EQ(engine.model_id(), "coder");
  EXPECT_TRUE(engine.serves("coder"));
  EXPECT_TRUE(engine.serves("coder-v2"));
  EXPECT_FALSE(engine.serves("qwen3-pycode-22m"));
  EXPECT_FALSE(engine.serves(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m"));
  EXPECT_EQ(engine.served_names(), (std::vector<std::string>{"coder", "coder-v2"}));
  // /v1/models lists each name with the fields of a single entry, as vLLM does, and
  // /v1/models/{id} answers for each; another name is a 404 that names them.
  Server server(engine, {"127.0.0.1", 0});
  httplib::Client c("127.0.0.1", server.start());
  const auto list = c.Get("/v1/models");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200);
  const json data = json::parse(list->body)["data"];
  ASSERT_EQ(data.size(), 2u) << list->body;
  for (size_t i = 0; i < data.size(); ++i) {
    const std::string name = eo.served_model_names[i];
    EXPECT_EQ(data[i]["id"], name);
    EXPECT_EQ(data[i]["object"], "model");
    EXPECT_EQ(data[i]["owned_by"], "lanegraph");
    EXPECT_EQ(data[i]["max_model_len"], 64);
    EXPECT_TRUE(data[i]["created"].is_number_integer());
    EXPECT_EQ(data[i].size(), 5u) << data[i];
    const auto one = c.Get(("/v1/models/" + name).c_str());
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, 200) << one->body;
    json entry = json::parse(one->body);
    entry["created"] = data[i]["created"];  // a second may have passed
    EXPECT_EQ(entry, data[i]);
  }
  // Answers carry the served name the request gave (vLLM's), the first when it gave none.
  for (const json& model : {json("coder-v2"), json("coder"), json()}) {
    json body = {{"prompt", "def"}, {"max_tokens", 1}};
    if (!model.is_null()) body["model"] = model;
    const auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["model"], model.is_null() ? json("coder") : model);
  }
  const auto other = c.Get("/v1/models/qwen3-pycode-22m");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_NE(json::parse(other->body)["error"]["message"].get<std::string>().find("this server serves 'coder', 'coder-v2'"),
            std::string::npos)
      << other->body;
  eo.served_model_names = {""};
  EXPECT_THROW(Engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo), lg::Error);
  // A name given twice would be listed twice by /v1/models: refused, naming it.
  eo.served_model_names = {"coder", "coder-v2", "coder"};
  try {
    Engine dup(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
    ADD_FAILURE() << "a served name given twice was accepted";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'coder' is given twice"), std::string::npos) << e.what();
  }
}

// A prompt given as token ids (OpenAI's form) is the model's input as is: the golden prompt's
// ids give transformers' greedy ids (return_token_ids) and the text prompt's answer.
TEST_F(ServerTest, TokenIdPromptsGiveTransformersTokens) {
  const Golden g = first_golden();
  const std::vector<int32_t> first16(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  const json by_text = post_ok("/v1/completions", {{"prompt", g.prompt}, {"max_tokens", 16}, {"temperature", 0}});
  for (const json& prompt : {json(g.prompt_ids), json::array({g.prompt_ids})}) {
    const json r = post_ok("/v1/completions",
                           {{"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}, {"return_token_ids", true}});
    EXPECT_EQ(r["choices"][0]["token_ids"], first16);
    EXPECT_EQ(r["choices"][0]["text"], by_text["choices"][0]["text"]);
    EXPECT_EQ(r["usage"], by_text["usage"]);
  }
  // Streamed, the chunks' ids add up to the same ids.
  auto r = post("/v1/completions", json{{"prompt", g.prompt_ids}, {"max_tokens", 16}, {"temperature", 0},
                                        {"stream", true}, {"return_token_ids", true}}.dump());
  ASSERT_TRUE(r);
  std::vector<int32_t> streamed;
  for (const auto& ev : sse_events(r->body)) {
    if (ev == "[DONE]") break;
    const json chunk = json::parse(ev);
    for (const auto& id : chunk["choices"][0]["token_ids"]) streamed.push_back(id);
  }
  EXPECT_EQ(streamed, first16);
  expect_400("/v1/completions", R"({"prompt": [750, 151936, 2075]})", "prompt[1]",
             "outside the model's vocabulary of 151936 ids");
  expect_400("/v1/completions", R"({"prompt": [[750], [282]]})", "prompt", "one prompt per request");
  expect_400("/v1/completions", R"({"prompt": [750, -1]})", "prompt[1]");
}

// This prompt ends a file: greedy decoding gives the eos token at once. ignore_eos goes on past
// it (the eos counted and in token_ids); its text is a special token's, left out by default
// (skip_special_tokens) and shown with skip_special_tokens false, streamed or not, as vLLM does.
TEST_F(ServerTest, IgnoreEosGeneratesPastTheEndOfSequence) {
  const std::string prompt = "    return x\n\n\nif __name__ == \"__main__\":\n    main()\n";
  const json stops = post_ok("/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(stops["choices"][0]["finish_reason"], "stop") << stops;
  ASSERT_EQ(stops["usage"]["completion_tokens"], 1);
  EXPECT_EQ(stops["choices"][0]["text"], "");
  const json goes_on = post_ok("/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0},
                                                   {"ignore_eos", true}, {"return_token_ids", true}});
  EXPECT_EQ(goes_on["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(goes_on["usage"]["completion_tokens"], 8);
  EXPECT_EQ(goes_on["choices"][0]["token_ids"][0], 151643);  // <|endoftext|>
  EXPECT_EQ(goes_on["choices"][0]["text"].get<std::string>().find("<|endoftext|>"), std::string::npos);
  const json keep = {{"prompt", prompt},   {"max_tokens", 8},         {"temperature", 0},
                     {"ignore_eos", true}, {"return_token_ids", true}, {"skip_special_tokens", false}};
  const json shown = post_ok("/v1/completions", keep);
  const json& choice = shown["choices"][0];
  ASSERT_EQ(choice["token_ids"], goes_on["choices"][0]["token_ids"]);  // the same tokens, only the text differs
  const std::string text = choice["text"];
  EXPECT_EQ(text.rfind("<|endoftext|>", 0), 0u) << text;
  EXPECT_EQ(text, engine_->tokenizer().decode(choice["token_ids"].get<std::vector<int32_t>>())) << text;
  EXPECT_EQ(post_stream("/v1/completions", keep).first, text);
}

// Generation stops on the tokenizer's eos token (tokenizer_config.json's eos_token) as on the
// configs' eos ids, as vLLM's does, for lg serve and lg batch alike (both run an Engine). A copy of
// the 22M model whose eos_token is the fifth greedy token of the golden prompt, a token neither
// config lists, stops there: "stop", the token counted, its text left out. ignore_eos goes past it.
TEST(EngineTest, TheTokenizersEosTokenStopsGeneration) {
  const Golden g = first_golden();
  const std::vector<int32_t> greedy(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  const int32_t eos = greedy[4];
  ASSERT_NE(eos, 151643);  // <|endoftext|>, the configs' eos
  const auto first = static_cast<size_t>(std::find(greedy.begin(), greedy.end(), eos) - greedy.begin());
  const lg::test::ModelCopy m(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m");
  const auto tok = lg::tokenizer::Tokenizer::from_file(m.dir / "tokenizer.json");
  for (const char* config : {"config.json", "generation_config.json"})
    ASSERT_EQ(json::parse(std::ifstream(m.dir / config))["eos_token_id"], 151643) << config;  // and no other
  m.edit_json("tokenizer_config.json", [&](json& j) { j["eos_token"] = *tok.id_to_token(eos); });
  EngineOptions eo;
  eo.max_seq = 64;
  Engine engine(m.dir.string(), eo);
  GenerationRequest req;
  req.max_tokens = 16;
  req.temperature = 0;
  const EngineResult r = engine.generate(g.prompt_ids, req, 0, nullptr);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.token_ids, std::vector<int32_t>(greedy.begin(), greedy.begin() + first + 1));
  EXPECT_EQ(r.text, tok.decode(std::vector<int32_t>(greedy.begin(), greedy.begin() + first)));
  req.ignore_eos = true;
  const EngineResult past = engine.generate(g.prompt_ids, req, 0, nullptr);
  EXPECT_EQ(past.finish_reason, "length");
  EXPECT_EQ(past.token_ids, greedy);
}

TEST_F(ServerTest, StreamingConcatenatesToTheNonStreamingText) {
  const Golden g = first_golden();
  const json body = {{"prompt", g.prompt}, {"max_tokens", 16}, {"temperature", 0}};
  const json whole = post_ok("/v1/completions", body);
  json stream_body = body;
  stream_body["stream_options"] = {{"include_usage", true}};
  json usage;
  const auto [text, finish] = post_stream("/v1/completions", stream_body, &usage);
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage, whole["usage"]);
}

TEST_F(ServerTest, StopStringCutsTheTextInBothModes) {
  const Golden g = first_golden();
  const std::vector<int32_t> first16(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  const std::string full = engine_->tokenizer().decode(first16);
  // A stop string from the middle of the golden text: the answer is the text before it.
  const size_t at = full.find("number");
  ASSERT_NE(at, std::string::npos) << full;
  const json body = {{"prompt", g.prompt}, {"max_tokens", 16}, {"temperature", 0}, {"stop", {"zzz", "number"}}};
  const json r = post_ok("/v1/completions", body);
  EXPECT_EQ(r["choices"][0]["text"], full.substr(0, at));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(r["usage"]["completion_tokens"].get<int>(), 16);
  const auto [text, finish] = post_stream("/v1/completions", body);
  EXPECT_EQ(text, full.substr(0, at));
  EXPECT_EQ(finish, "stop");
}

// skip_special_tokens (vLLM's; default true): the text leaves out the tokens tokenizer.json's
// added_tokens mark "special", streamed or not, and stop strings look at that text; false keeps
// them. The 22M model never generates its special tokens (it saw none in training), so a copy of it
// marks a token of each greedy answer (completion, chat) as a special added token, as Llama 2's
// <s> is one inside the vocabulary: the answers' ids stay the same, their text does not.
TEST_F(ServerTest, SkipSpecialTokensLeavesThemOutOfTheText) {
  const Golden g = first_golden();
  const json completion = {{"prompt", g.prompt}, {"max_tokens", 16}, {"temperature", 0}, {"return_token_ids", true}};
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"return_token_ids", true}};
  const json completion_ids = json(std::vector<int32_t>(g.greedy_ids.begin(), g.greedy_ids.begin() + 16));
  const json chat_ids = post_ok("/v1/chat/completions", chat)["choices"][0]["token_ids"];
  const lg::test::ModelCopy m(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m");
  const std::vector<int32_t> marked_ids = {m.mark_special_token(completion_ids.get<std::vector<int32_t>>()),
                                           m.mark_special_token(chat_ids.get<std::vector<int32_t>>())};
  ASSERT_GE(marked_ids[0], 0) << completion_ids;
  ASSERT_GE(marked_ids[1], 0) << chat_ids;
  const lg::tokenizer::Tokenizer& tok = engine_->tokenizer();  // the original: special tokens as shipped
  EngineOptions eo;
  eo.max_seq = kContext;
  Engine engine(m.dir.string(), eo);
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  for (const int32_t id : marked_ids) ASSERT_TRUE(engine.tokenizer().is_special(id)) << id;

  for (const auto& [path, body, ids] : {std::tuple{"/v1/completions", completion, completion_ids},
                                        std::tuple{"/v1/chat/completions", chat, chat_ids}}) {
    SCOPED_TRACE(path);
    std::map<bool, std::string> texts;
    for (const bool skip : {true, false}) {
      json request = body;
      if (!skip) request["skip_special_tokens"] = false;  // true is the default
      const json r = post_ok(path, request, port);
      const json& choice = r["choices"][0];
      ASSERT_EQ(choice["token_ids"], ids);  // the same model: the same answer
      std::vector<int32_t> shown;
      for (size_t i = 0; i < ids.size(); ++i) {
        const bool is_eos = i + 1 == ids.size() && choice["finish_reason"] == "stop";  // never text
        if (!is_eos && !(skip && engine.tokenizer().is_special(ids[i]))) shown.push_back(ids[i]);
      }
      const std::string text = path == std::string("/v1/completions") ? choice["text"] : choice["message"]["content"];
      EXPECT_EQ(text, tok.decode(shown)) << "skip_special_tokens " << skip;
      EXPECT_EQ(post_stream(path, request, nullptr, port).first, text) << "skip_special_tokens " << skip;
      texts[skip] = text;
    }
    EXPECT_NE(texts[true], texts[false]);
  }
  // A stop string that is the marked token's text: in the text it is kept in, it stops the answer.
  json stopped = completion;
  const std::string stop = tok.decode(std::vector<int32_t>{marked_ids[0]});
  stopped["stop"] = stop;
  const json skipped = post_ok("/v1/completions", stopped, port);
  ASSERT_EQ(skipped["choices"][0]["text"].get<std::string>().find(stop), std::string::npos) << skipped;
  EXPECT_EQ(skipped["choices"][0]["finish_reason"], "length");
  stopped["skip_special_tokens"] = false;
  const json kept = post_ok("/v1/completions", stopped, port);
  EXPECT_EQ(kept["choices"][0]["finish_reason"], "stop");
  const std::string full = tok.decode(completion_ids.get<std::vector<int32_t>>());
  EXPECT_EQ(kept["choices"][0]["text"], full.substr(0, full.find(stop)));
}

TEST_F(ServerTest, FullContextEndsWithLength) {
  // A prompt that leaves little room: a max_tokens that fills the context exactly runs to its end,
  // and usage never counts past the context (prompt + completion <= context).
  std::string prompt;
  for (int i = 0; i < 245; ++i) prompt += " x";
  const auto n = static_cast<int64_t>(engine_->tokenizer().encode(prompt).size());
  ASSERT_LT(n, kContext - 2);
  ASSERT_GT(n, kContext - 16);  // the default of 16 does not fit: it is cut, not refused
  for (const json& extra : {json{{"max_tokens", kContext - n}}, json::object()}) {
    json body = {{"prompt", prompt}, {"temperature", 0}, {"ignore_eos", true}};
    body.update(extra);
    const json r = post_ok("/v1/completions", body);
    EXPECT_EQ(r["usage"]["completion_tokens"], kContext - n);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["total_tokens"].get<int64_t>(), kContext);
  }
  // Chat's default max_tokens is the rest of the context: the same bound.
  const json chat = post_ok("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", prompt}}}},
                                                     {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(chat["usage"]["total_tokens"], kContext);
  // A prompt of exactly the context leaves no room: a 400 that says so.
  std::vector<int32_t> whole(static_cast<size_t>(kContext), 33);
  expect_400("/v1/completions", json{{"prompt", whole}}.dump(), "prompt", "no room is left for a completion");
}

// An explicit max_tokens that the context cannot hold after the prompt is a 400 naming the
// prompt's length, max_tokens and the context, as vLLM answers (it used to be cut to the room
// left without a word); one token less than that is served in full.
TEST_F(ServerTest, MaxTokensPastTheContextIs400NamingTheSizes) {
  const std::vector<int32_t> prompt(200, 750);  // token ids: the length is exact
  const int64_t room = kContext - 200;
  const json fits = post_ok("/v1/completions", {{"prompt", prompt}, {"max_tokens", room}, {"temperature", 0},
                                                {"ignore_eos", true}});
  EXPECT_EQ(fits["usage"]["completion_tokens"], room);
  EXPECT_EQ(fits["usage"]["total_tokens"], kContext);
  const auto str = [](int64_t v) { return std::to_string(v); };
  const std::string over = "'max_tokens' is " + str(room + 1) + " and the prompt has 200 tokens: together more than the "
                           "context of " + str(kContext) + " tokens (at most " + str(room) + " new tokens fit after "
                           "this prompt)";
  expect_400("/v1/completions", json{{"prompt", prompt}, {"max_tokens", room + 1}}.dump(), "max_tokens", over);
  expect_400("/v1/completions", json{{"prompt", prompt}, {"max_tokens", room + 1}, {"stream", true}}.dump(), "max_tokens",
             over);
  // Near 2^63: compared, never summed with the prompt.
  expect_400("/v1/completions", json{{"prompt", prompt}, {"max_tokens", INT64_MAX}}.dump(), "max_tokens",
             "'max_tokens' is " + str(INT64_MAX) + " and the prompt has 200 tokens");
  // Chat names the field the client sent; the rendered prompt's length is what counts.
  const json messages = {{{"role", "user"}, {"content", "def f():"}}};
  const json chat = post_ok("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}});
  const int64_t chat_prompt = chat["usage"]["prompt_tokens"];
  expect_400("/v1/chat/completions",
             json{{"messages", messages}, {"max_completion_tokens", kContext - chat_prompt + 1}}.dump(),
             "max_completion_tokens",
             "'max_completion_tokens' is " + str(kContext - chat_prompt + 1) + " and the prompt has " + str(chat_prompt) +
                 " tokens: together more than the context of " + str(kContext) + " tokens (at most " +
                 str(kContext - chat_prompt) + " new tokens fit");
  expect_400("/v1/chat/completions", json{{"messages", messages}, {"max_tokens", kContext}}.dump(), "max_tokens",
             "'max_tokens' is " + str(kContext) + " and the prompt has " + str(chat_prompt) + " tokens");
}

TEST_F(ServerTest, GoneClientStopsGeneration) {
  // The engine hears the client is gone (on_text returns false) and stops at the next token.
  GenerationRequest req;
  req.max_tokens = 200;
  req.temperature = 0;
  int pieces = 0;
  const auto ids = engine_->encode_prompt("def fibonacci(n):\n", "prompt");
  const EngineResult r = engine_->generate(ids, req, 0, [&](const EnginePiece&) { return ++pieces < 3; });
  EXPECT_EQ(pieces, 3);
  EXPECT_LE(r.completion_tokens, 4);
  EXPECT_EQ(r.finish_reason, "abort");  // cut by the server, as vLLM says; not max_tokens reached
}

TEST_F(ServerTest, SeededSamplingIsReproducible) {
  const json body = {{"prompt", "import "}, {"max_tokens", 12}, {"temperature", 0.9}, {"top_p", 0.95}, {"top_k", 40}, {"seed", 1234}};
  const json a = post_ok("/v1/completions", body);
  const json b = post_ok("/v1/completions", body);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

// Answers' ids are "cmpl-" / "chatcmpl-" and 32 random hex digits, as vLLM's and OpenAI's (they were
// cmpl-<unix seconds>-<counter>, which says how busy the server is and repeats across restarts):
// two requests never share one, and every chunk of a stream carries its request's.
TEST_F(ServerTest, ResponseIdsAreRandomHexPerRequest) {
  std::set<std::string> seen;
  for (const auto& [path, prefix, body] :
       {std::tuple{"/v1/completions", "cmpl", json{{"prompt", "def"}, {"max_tokens", 2}}},
        std::tuple{"/v1/chat/completions", "chatcmpl", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                            {"max_tokens", 2}}}}) {
    SCOPED_TRACE(path);
    const std::regex shape(std::string(prefix) + "-[0-9a-f]{32}");
    for (int i = 0; i < 2; ++i) {
      const std::string id = post_ok(path, body)["id"];
      EXPECT_TRUE(std::regex_match(id, shape)) << id;
      EXPECT_TRUE(seen.insert(id).second) << "id given twice: " << id;
    }
    json stream = body;
    stream["stream"] = true;
    const auto r = post(path, stream.dump());
    ASSERT_TRUE(r);
    std::set<std::string> chunk_ids;
    for (const std::string& ev : sse_events(r->body))
      if (ev != "[DONE]") chunk_ids.insert(json::parse(ev)["id"].get<std::string>());
    ASSERT_EQ(chunk_ids.size(), 1u) << r->body;
    EXPECT_TRUE(std::regex_match(*chunk_ids.begin(), shape)) << *chunk_ids.begin();
    EXPECT_TRUE(seen.insert(*chunk_ids.begin()).second) << "id given twice: " << *chunk_ids.begin();
  }
}

TEST_F(ServerTest, ChatCompletionRendersTheModelsTemplate) {
  // The model's own template (Qwen3's, from tokenizer_config.json) gives for this conversation the
  // same text as the ChatML lg serve hard-coded before (tests/chat checks that in general).
  const std::string chatml =
      "<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\ndef add(a, b):<|im_end|>\n<|im_start|>assistant\n";
  const auto prompt_ids = engine_->tokenizer().encode(chatml);
  // The template's markers are matched as the special tokens, not spelled out in pieces.
  EXPECT_EQ(std::count(prompt_ids.begin(), prompt_ids.end(), *engine_->tokenizer().token_to_id("<|im_start|>")), 3);
  const json body = {{"messages", {{{"role", "system"}, {"content", "You write Python."}}, {{"role", "user"}, {"content", "def add(a, b):"}}}},
                     {"max_tokens", 8},
                     {"temperature", 0}};
  const json r = post_ok("/v1/chat/completions", body);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  ASSERT_TRUE(r["choices"][0]["message"]["content"].is_string());
  const std::string finish = r["choices"][0]["finish_reason"];
  EXPECT_TRUE(finish == "stop" || finish == "length") << finish;
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_ids.size());
  EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), 8);
  const auto [text, sfinish] = post_stream("/v1/chat/completions", body);
  EXPECT_EQ(text, r["choices"][0]["message"]["content"]);
  EXPECT_EQ(sfinish, finish);
}

TEST_F(ServerTest, BadInputIs400NamingTheField) {
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  expect_400(c, "{\"prompt\": ", "", "not valid JSON");
  expect_400(c, "{\"prompt\": \"\xff\"}", "", "not valid JSON");
  expect_400(c, "[]", "");
  expect_400(c, "{}", "prompt");
  expect_400(c, R"({"prompt": 5})", "prompt");
  expect_400(c, R"({"prompt": ""})", "prompt");
  // An id outside the vocabulary, in ids sent as an array of one array: named where it is.
  expect_400(c, R"({"prompt": [[750, 999999999]]})", "prompt[0][1]", "outside the model's vocabulary");
  expect_400(c, R"({"prompt": "x", "max_tokens": 0})", "max_tokens");
  expect_400(c, R"({"prompt": "x", "max_tokens": "3"})", "max_tokens");
  expect_400(c, R"({"prompt": "x", "temperature": -0.5})", "temperature");
  expect_400(c, R"({"prompt": "x", "top_p": 2})", "top_p");
  expect_400(c, R"({"prompt": "x", "top_k": "a"})", "top_k");
  expect_400(c, R"({"prompt": "x", "seed": -4})", "seed");
  expect_400(c, R"({"prompt": "x", "stop": {"a": 1}})", "stop");
  expect_400(c, R"({"prompt": "x", "stream": 1})", "stream");
  expect_400(c, R"({"prompt": "x", "skip_special_tokens": "false"})", "skip_special_tokens", "must be a boolean");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "skip_special_tokens": 0, "stream": true})",
             "skip_special_tokens", "must be a boolean");
  // Fields the server does not implement are refused when they would change the answer (the
  // bias would forbid a token the answer has), streamed or not; a wrong type is named too.
  expect_400(c, R"({"prompt": "x", "logit_bias": {"2643": -100}})", "logit_bias", "is not supported by lg serve");
  expect_400(c, R"({"prompt": "x", "logprobs": 3, "stream": true})", "logprobs", "is not supported by lg serve");
  expect_400(c, R"({"prompt": "x", "presence_penalty": "abc"})", "presence_penalty", "must be a number");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 2})", "logprobs",
             "is not supported by lg serve");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice",
             "is not supported by lg serve");
  // A prompt longer than the context: the message gives both lengths. The stream flag must not
  // turn it into a 200 with an error event.
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += " x";
  const size_t n = engine_->tokenizer().encode(long_prompt).size();
  ASSERT_GT(n, static_cast<size_t>(kContext));
  expect_400(c, json{{"prompt", long_prompt}, {"stream", true}}.dump(), "prompt",
             std::to_string(n) + " tokens, more than the context of " + std::to_string(kContext) + " tokens");
  expect_400(chat, "{", "");
  expect_400(chat, R"({"prompt": "x"})", "messages");
  expect_400(chat, R"({"messages": {}})", "messages");
  expect_400(chat, R"({"messages": []})", "messages");
  expect_400(chat, R"({"messages": [{"role": "user"}]})", "messages[0].content");
  expect_400(chat, R"({"messages": [{"content": "x"}]})", "messages[0].role");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens");
  expect_400(chat, json{{"messages", {{{"role", "user"}, {"content", long_prompt}}}}}.dump(), "messages",
             "more than the context of " + std::to_string(kContext));
}

TEST_F(ServerTest, UnknownPathsAndModelsAre404) {
  auto r = client().Get("/v1/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(json::parse(r->body).contains("error"));
  auto p = post("/v2/completions", R"({"prompt": "x"})");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 404);
  auto m = post("/v1/completions", R"({"prompt": "x", "model": "gpt-4"})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 404);
  EXPECT_EQ(json::parse(m->body)["error"]["param"], "model");
}

TEST_F(ServerTest, UnknownModelIs404BeforeThePromptIsRead) {
  // A client pointed at the wrong model hears that first, as vLLM checks the model before the
  // prompt: a prompt too long for the context, or messages the template cannot render, answered
  // a 400 about the prompt (after tokenizing it and rendering the template) instead.
  const auto expect_404 = [](const std::string& path, const json& body) {
    auto r = post(path, body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["param"], "model") << r->body;
    EXPECT_EQ(j["error"]["type"], "NotFoundError") << r->body;
  };
  std::string too_long;  // one token per " x": twice the context
  for (int64_t i = 0; i < 2 * kContext; ++i) too_long += " x";
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", too_long}});
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", json::array({999999999})}});
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", "x"}, {"max_tokens", 10 * kContext}});
  expect_404("/v1/chat/completions",
             {{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", too_long}}}}});
  // A body that is not a request at all is still the 400 it was: its fields cannot be read.
  expect_400("/v1/completions", R"({"model": "gpt-4", "prompt": "x", "max_tokens": "8"})", "max_tokens");
}

TEST_F(ServerTest, SecondServerOnABusyPortIsRefused) {
  // httplib sets SO_REUSEPORT by default; with it a second server bound the same port and took
  // part of the connections. It must be refused instead.
  Server second(*engine_, {"127.0.0.1", port_});
  EXPECT_THROW(second.bind(), lg::Error);
  auto r = client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, RandomBodiesNeverCrashTheServer) {
  // Mutations of a valid body (bytes flipped, dropped, cut): each answer is a 200 or a 400 with
  // an error body, and the server stays up.
  std::mt19937 rng(std::random_device{}());
  const std::string valid_completion =
      R"({"prompt": "def f(x):", "max_tokens": 2, "temperature": 0.5, "stop": ["\n"], "seed": 3})";
  const std::string valid_chat =
      R"({"messages": [{"role": "user", "content": "def f(x):"}], "max_tokens": 2, "top_k": 5, "stream": false})";
  for (int i = 0; i < 150; ++i) {
    std::string body = i % 2 ? valid_completion : valid_chat;
    const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, body.size() - 1)(rng);
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0: body[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng)); break;
        case 1: body.erase(at, 1); break;
        default: body.resize(at); break;
      }
    }
    auto r = post(i % 2 ? "/v1/completions" : "/v1/chat/completions", body);
    ASSERT_TRUE(r) << "no response to: " << body;
    EXPECT_TRUE(r->status == 200 || r->status == 400 || r->status == 404) << r->status << " for " << body;
    if (r->status != 200) {
      EXPECT_TRUE(json::parse(r->body).contains("error")) << body;
    }
  }
  EXPECT_EQ(client().Get("/health")->status, 200);
}

TEST_F(ServerTest, ConcurrentRequestsAreServedOneAtATime) {
  // Batch 1: four clients at once each get the answer they would get alone.
  const Golden g = first_golden();
  const json body = {{"prompt", g.prompt}, {"max_tokens", 8}, {"temperature", 0}};
  const std::string want = post_ok("/v1/completions", body)["choices"][0]["text"];
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      auto r = post("/v1/completions", body.dump());
      if (r && r->status == 200) got[i] = json::parse(r->body)["choices"][0]["text"];
    });
  for (auto& t : threads) t.join();
  for (const auto& s : got) EXPECT_EQ(s, want);
}

TEST_F(ServerTest, NonJsonContentTypeIs415AtAnySize) {
  // Plain `curl -d` sends application/x-www-form-urlencoded; httplib capped such bodies at 8 KB
  // with a 413 "too large" that hid the real cause. Every body not declared application/json is
  // a 415 saying which header to send (vLLM's answer), below and above 8 KB; a JSON body of the
  // same 9.8 KB (a valid request padded with whitespace) is served.
  const std::string small = R"({"prompt": "def f():", "max_tokens": 1, "temperature": 0})";
  const std::string big = small + std::string(9800, ' ');
  for (const std::string& type : {std::string("application/x-www-form-urlencoded"), std::string("text/plain")}) {
    for (const std::string* body : {&small, &big}) {
      auto r = client().Post("/v1/completions", *body, type.c_str());
      ASSERT_TRUE(r) << type;
      EXPECT_EQ(r->status, 415) << type << " " << body->size() << " bytes: " << r->body;
      json j;
      ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
      EXPECT_EQ(j["error"]["type"], "invalid_request_error");
      EXPECT_NE(j["error"]["message"].get<std::string>().find("Content-Type: application/json"), std::string::npos)
          << r->body;
    }
  }
  auto chat = client().Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})", "text/plain");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 415);
  // No Content-Type at all (httplib's client sends none for an empty type) is refused the same way.
  httplib::Headers none;
  auto untyped = client().Post("/v1/completions", none, small, "");
  ASSERT_TRUE(untyped);
  EXPECT_EQ(untyped->status, 415) << untyped->body;

  auto ok = client().Post("/v1/completions", big, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto charset = client().Post("/v1/completions", small, "Application/JSON; charset=utf-8");
  ASSERT_TRUE(charset);
  EXPECT_EQ(charset->status, 200) << charset->body;
  // The server's own cap (ServerOptions::max_body_bytes, 4 MiB) still holds for JSON.
  auto huge = client().Post("/v1/completions", small + std::string(5 * 1024 * 1024, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  EXPECT_TRUE(json::parse(huge->body).contains("error"));
}

TEST_F(ServerTest, WrongMethodOnAKnownPathIs405) {
  // `GET /v1/completions` is a method error, not a missing route: 405 with Allow, an OpenAI error body.
  auto expect_405 = [](const httplib::Result& r, const std::string& allow) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405) << r->body;
    EXPECT_EQ(r->get_header_value("Allow"), allow);
    json j;
    ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("Method Not Allowed"), std::string::npos) << r->body;
  };
  expect_405(client().Get("/v1/completions"), "POST");
  expect_405(client().Get("/v1/chat/completions"), "POST");
  expect_405(client().Delete("/v1/completions"), "POST");
  expect_405(client().Put("/v1/chat/completions", "{}", "application/json"), "POST");
  expect_405(client().Post("/health", "{}", "application/json"), "GET");
  expect_405(client().Post("/v1/models", "{}", "application/json"), "GET");
  auto head = client().Head("/health");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

TEST_F(ServerTest, BytesThatAreNotHttpAre400WithAJsonError) {
  // Garbage (here the start of a TLS handshake, a client speaking https to the plain port) fails
  // httplib's request-line parse; the answer was a 400 whose body said only "HTTP 400".
  using namespace std::chrono_literals;
  for (const std::string& bytes : {std::string("\x16\x03\x01\x02\xfc\x01\x03\r\n\r\n"),
                                   std::string("hello there\r\n\r\n"), std::string("POST /v1/completions HTTP/9\r\n\r\n")}) {
    const std::string got = lg::test::exchange(port_, bytes, 10s);
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 400) << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("not valid HTTP/1.1"), std::string::npos) << r.body;
  }
  EXPECT_EQ(client().Get("/health")->status, 200);
}

TEST_F(ServerTest, ContentLengthThatIsNotAByteCountIs400AtOnce) {
  // httplib took "-5" for 2^64 - 5 (strtoull), tried to read and discard that many bytes, and
  // answered 413 when its 30 s read timeout ended. Each value here is a 400 naming the header,
  // well within that timeout.
  using namespace std::chrono_literals;
  for (const std::string length : {"-5", "abc", "5x", "99999999999999999999999"}) {
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                length + "\r\n\r\n{\"prompt\": \"x\"}";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = lg::test::exchange(port_, request, 20s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << length;
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 400) << length << ": " << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("'Content-Length: " + length + "'"), std::string::npos)
        << r.body;
  }
  // A well-formed length on the same raw path is served.
  const std::string ok = lg::test::exchange(
      port_, lg::test::post_text("/v1/completions", R"({"prompt": "x", "max_tokens": 1})"), 20s);
  EXPECT_EQ(lg::test::first_response(ok).status, 200) << ok;
}

TEST_F(ServerTest, BodylessRequestWithoutContentLengthIsAnsweredAtOnce) {
  // `curl -X POST URL` sends neither Content-Length nor Transfer-Encoding: such a request has no
  // body (RFC 9112 6.3), but httplib 0.11 read one until its 30 s read timeout ended and only then
  // answered (a 400 "could not be read", on every path). Each is now answered at once, as it
  // would be with 'Content-Length: 0'.
  using namespace std::chrono_literals;
  struct Case {
    std::string method, path, headers;
    int status;
  };
  for (const Case& c : {Case{"POST", "/v1/completions", "Content-Type: application/json\r\n", 400},
                        Case{"POST", "/v1/chat/completions", "", 415}, Case{"POST", "/health", "", 405},
                        Case{"PUT", "/v1/completions", "", 405}, Case{"PATCH", "/nope", "", 404}}) {
    const std::string request = c.method + " " + c.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + c.headers + "\r\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = lg::test::exchange(port_, request, 20s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << c.method << " " << c.path;
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << ": " << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_TRUE(j.contains("error")) << r.body;
  }
}

}  // namespace

namespace {

// Sends a raw HTTP/1.1 POST to 127.0.0.1:port and returns the open socket (-1 on failure).
int send_raw_post(int port, const std::string& path, const std::string& body) {
  const int fd = lg::test::tcp_connect(port);
  if (fd < 0) return -1;
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!lg::test::send_all(fd, req)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A non-streaming client that hangs up must not keep the lane: its generation stops at the next
// token and the next request is served at once. Before the fix the abandoned request ran to
// max_tokens (a 3-token request then waited 26-35 s behind a 3000-token one).
TEST(ServerHangUpTest, ClientThatHangsUpFreesTheLane) {
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  constexpr int64_t kLongContext = 2048;
  EngineOptions eo;
  eo.max_seq = kLongContext;
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  auto post = [&](const json& body) { return c.Post("/v1/completions", body.dump(), "application/json"); };

  // The machine's decode speed, and proof that greedy "def f():" does not end early: 64 tokens,
  // finish "length" (the prompt runs to the end of the context without eos, checked when this
  // test was written: a full run gives finish_reason "length").
  const json calib = {{"prompt", "def f():"}, {"max_tokens", 64}, {"temperature", 0}};
  const auto t0 = clock::now();
  auto r64 = post(calib);
  const double t64 = secs(clock::now() - t0);
  ASSERT_TRUE(r64);
  ASSERT_EQ(r64->status, 200) << r64->body;
  ASSERT_EQ(json::parse(r64->body)["usage"]["completion_tokens"], 64);

  // The abandoned request: the rest of the 2048-token context, >= 2000 tokens, so at least
  // 2000/64 = 31x the calibration time (attention grows with length, so more in fact).
  const json long_body = {{"prompt", "def f():"}, {"max_tokens", kLongContext - 8}, {"temperature", 0}};
  const int fd = send_raw_post(port, "/v1/completions", long_body.dump());
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it is generating now
  ::close(fd);

  const auto t1 = clock::now();
  auto short_r = post({{"prompt", "def f():"}, {"max_tokens", 3}, {"temperature", 0}});
  const double t_short = secs(clock::now() - t1);
  ASSERT_TRUE(short_r);
  EXPECT_EQ(short_r->status, 200) << short_r->body;
  // Had the abandoned request run on, the short one would wait >= ~31 * t64 minus the 0.3 s
  // already spent. A quarter of that (about 8 x t64) leaves wide room for a loaded machine and
  // the short request itself (3 tokens, far less than t64), and still fails without the fix.
  const double bound = 0.25 * (static_cast<double>(kLongContext - 8) / 64.0) * t64;
  EXPECT_LT(t_short, bound) << "t64 " << t64 << " s, short request " << t_short << " s";
  RecordProperty("t64_s", std::to_string(t64));
  RecordProperty("short_after_hang_up_s", std::to_string(t_short));
  server.stop();
}

}  // namespace

namespace {

// A model directory whose tokenizer.json belongs to another checkpoint (the Qwen3 tokenizer over
// tiny-qwen3's 512-id vocabulary): a prompt id past vocab_size is a 400 naming the field, not a
// 500 from the embedding gather.
TEST(EngineTest, PromptIdOutsideTheVocabularyNamesTheField) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lg_srv_vocab_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const fs::path tiny = fs::path(LG_SHARED_DIR) / "fixtures" / "tiny-qwen3";
  fs::copy_file(tiny / "config.json", dir / "config.json");
  fs::copy_file(tiny / "model.safetensors", dir / "model.safetensors");
  fs::create_symlink(fs::path(LG_SOURCE_DIR) / "models" / "qwen3-pycode-22m" / "tokenizer.json", dir / "tokenizer.json");
  {
    lg::server::EngineOptions eo;
    eo.max_seq = 64;
    lg::server::Engine engine(dir.string(), eo);
    try {
      engine.encode_prompt("def fibonacci(n):", "prompt");
      ADD_FAILURE() << "expected a RequestError";
    } catch (const lg::server::RequestError& e) {
      EXPECT_EQ(e.param(), "prompt");
      EXPECT_NE(std::string(e.what()).find("outside the model's vocabulary of 512 ids"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
