// lg serve end to end, what it generates: the server runs in-process on an ephemeral 127.0.0.1 port
// with the cpu lane on the repo's 22M model; httplib's client calls it. Greedy completions are
// checked against the transformers fp32 greedy tokens of shared/fixtures/qwen3-pycode-22m-golden.json;
// then token-id prompts, eos, streaming, stop strings, skip_special_tokens, the context's bound on
// max_tokens, seeded sampling, response ids, the chat template, model names and concurrent clients.
// What the server refuses at the HTTP level is server_http_test.cpp's.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
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
#include "server/server.h"
#include "server_test_fixture.h"
#include "support/error.h"

namespace {

using nlohmann::json;
using namespace lg::server;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::kContext;
using lg::test::ServerTest;
using lg::test::sse_events;

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
  auto v = client().Get("/version");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 200);
  EXPECT_EQ(json::parse(v->body), json({{"version", LG_VERSION}}));
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
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  // The model directory as it was given (vLLM's default served name is the path), with a
  // trailing slash too: the same model.
  const std::string path = std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m";
  for (const std::string& name : {path, path + "/"}) {
    const json r = post_ok("/v1/completions", {{"model", name}, {"prompt", "def"}, {"max_tokens", 1}});
    EXPECT_EQ(r["model"], "qwen3-pycode-22m") << name;
  }
  // An empty name is the served model (vLLM's answer; it was a 404 naming '').
  EXPECT_EQ(post_ok("/v1/completions", {{"model", ""}, {"prompt", "def"}, {"max_tokens", 1}})["model"],
            "qwen3-pycode-22m");
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
  EXPECT_NE(json::parse(other->body)["error"]["message"].get<std::string>().find("the names served here are 'coder', 'coder-v2'"),
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

// stream_options.continuous_usage_stats (vLLM's extension) was silently ignored. Every chunk then
// carries the usage so far, as vLLM's do: the prompt's tokens, the ids generated up to that chunk
// (0 in chat's role chunk), the total in the finish_reason chunk, which equals the final usage
// chunk's and the non-streamed answer's.
TEST_F(ServerTest, ContinuousUsageStatsPutsUsageInEveryChunk) {
  const Golden g = first_golden();
  const json completion = {{"prompt", g.prompt}, {"max_tokens", 12}, {"temperature", 0}, {"return_token_ids", true}};
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"return_token_ids", true}};
  for (const auto& [path, body] : {std::pair{"/v1/completions", completion}, std::pair{"/v1/chat/completions", chat}}) {
    SCOPED_TRACE(path);
    const json whole = post_ok(path, body);
    json streamed = body;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"continuous_usage_stats", true}};  // include_usage implied
    auto r = post(path, streamed.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto events = sse_events(r->body);
    ASSERT_GE(events.size(), 4u) << r->body;
    ASSERT_EQ(events.back(), "[DONE]");
    const json last = json::parse(events[events.size() - 2]);
    EXPECT_TRUE(last["choices"].empty()) << last;
    EXPECT_EQ(last["usage"], whole["usage"]);
    const int64_t prompt_tokens = whole["usage"]["prompt_tokens"];
    int64_t ids = 0;
    for (size_t i = 0; i + 2 < events.size(); ++i) {
      const json ev = json::parse(events[i]);
      ASSERT_TRUE(ev.contains("usage")) << events[i];
      const json& u = ev["usage"];
      const json& choice = ev["choices"].at(0);
      if (choice.contains("token_ids")) ids += static_cast<int64_t>(choice["token_ids"].size());
      EXPECT_EQ(u["prompt_tokens"], prompt_tokens) << events[i];
      EXPECT_EQ(u["completion_tokens"], ids) << events[i];
      EXPECT_EQ(u["total_tokens"], prompt_tokens + ids) << events[i];
      if (i == 0 && path == std::string("/v1/chat/completions")) {
        EXPECT_EQ(u["completion_tokens"], 0) << events[i];
      }
      if (!choice["finish_reason"].is_null()) {
        EXPECT_EQ(u, whole["usage"]) << events[i];
      }
    }
    EXPECT_EQ(ids, whole["usage"]["completion_tokens"]);
    // Without it, as before: only the last chunk has usage.
    streamed["stream_options"] = {{"include_usage", true}};
    r = post(path, streamed.dump());
    ASSERT_TRUE(r);
    const auto plain = sse_events(r->body);
    for (size_t i = 0; i + 2 < plain.size(); ++i) EXPECT_FALSE(json::parse(plain[i]).contains("usage")) << plain[i];
     // With include_usage false, vLLM sends no usage at all (should_include_usage); this was a 400.
    streamed["stream_options"] = {{"include_usage", false}, {"continuous_usage_stats", true}};
    r = post(path, streamed.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto bare = sse_events(r->body);
    ASSERT_GE(bare.size(), 3u) << r->body;
    EXPECT_EQ(bare.back(), "[DONE]");
    for (size_t i = 0; i + 1 < bare.size(); ++i) {
      const json ev = json::parse(bare[i]);
      EXPECT_FALSE(ev.contains("usage")) << bare[i];
      EXPECT_FALSE(ev["choices"].empty()) << bare[i];  // no usage chunk either
    }
  }
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
  // Tokens held back while a stop string may be starting send no empty chunks (vLLM sends none;
  // they went out as "text": ""). A stop string of the whole text before the cut and a snowman
  // holds back every token up to "number", which then releases them.
  json streamed = body;
  streamed["stream"] = true;
  streamed["stop"].push_back(full.substr(0, at) + "\xe2\x98\x83");  // U+2603
  const auto r2 = post("/v1/completions", streamed.dump());
  ASSERT_TRUE(r2);
  const auto events = sse_events(r2->body);
  ASSERT_GE(events.size(), 2u) << r2->body;
  std::string streamed_text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json ev = json::parse(events[i]);
    if (!ev["choices"].empty()) streamed_text += ev["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed_text, full.substr(0, at)) << r2->body;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json choice = json::parse(events[i])["choices"].at(0);
    if (choice["finish_reason"].is_null()) {
      EXPECT_NE(choice["text"], "") << r2->body;
    }
  }
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
  EXPECT_TRUE(r["choices"][0]["message"].contains("refusal") && r["choices"][0]["message"]["refusal"].is_null()) << r;
  const std::string finish = r["choices"][0]["finish_reason"];
  EXPECT_TRUE(finish == "stop" || finish == "length") << finish;
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_ids.size());
  EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), 8);
  const auto [text, sfinish] = post_stream("/v1/chat/completions", body);
  EXPECT_EQ(text, r["choices"][0]["message"]["content"]);
  EXPECT_EQ(sfinish, finish);
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
