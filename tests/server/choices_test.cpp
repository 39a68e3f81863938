// Several choices a request (OpenAI's `n`) through lg serve on the cpu lane of the 22M model: each
// choice is the answer the same request with n = 1 gets (choice i seeded with seed + i, as vLLM
// seeds them), whole or streamed; usage counts the prompt once and every choice's tokens.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_test_fixture.h"

namespace {

using nlohmann::json;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::ServerTest;

TEST_F(ServerTest, EachOfNChoicesIsTheAnswerOfItsOwnRequest) {
  const Golden g = first_golden();
  const json sampled = {{"prompt", g.prompt_ids}, {"max_tokens", 12}, {"temperature", 1.2}, {"seed", 40},
                        {"ignore_eos", true}, {"return_token_ids", true}};
  json three = sampled;
  three["n"] = 3;
  const json answer = post_ok("/v1/completions", three);
  ASSERT_EQ(answer["choices"].size(), 3u);
  std::vector<json> alone;
  for (int i = 0; i < 3; ++i) {
    json one = sampled;
    one["seed"] = 40 + i;
    alone.push_back(post_ok("/v1/completions", one)["choices"][0]);
    const json& c = answer["choices"][static_cast<size_t>(i)];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["text"], alone.back()["text"]) << "choice " << i;
    EXPECT_EQ(c["token_ids"], alone.back()["token_ids"]) << "choice " << i;
    EXPECT_EQ(c["finish_reason"], "length");
  }
  EXPECT_NE(alone[0]["token_ids"], alone[1]["token_ids"]) << "different seeds draw different answers";
  EXPECT_EQ(answer["usage"], json({{"prompt_tokens", g.prompt_ids.size()}, {"completion_tokens", 36},
                                   {"total_tokens", g.prompt_ids.size() + 36}}));

  // Streamed: each chunk carries one choice; every choice's text and ids add up to its answer,
  // and its finish_reason comes once, last for it; the usage chunk counts them all.
  three["stream"] = true;
  three["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  auto r = post("/v1/completions", three.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::map<int, std::string> text;
  std::map<int, std::vector<int32_t>> ids;
  std::map<int, int> finishes;
  json usage;
  for (const std::string& e : lg::test::sse_events(r->body)) {
    if (e == "[DONE]") continue;
    const json ev = json::parse(e);
    if (ev["choices"].empty()) {
      usage = ev["usage"];
      continue;
    }
    ASSERT_EQ(ev["choices"].size(), 1u) << e;
    const json& c = ev["choices"][0];
    const int i = c["index"];
    EXPECT_EQ(finishes[i], 0) << "a chunk of choice " << i << " after its finish_reason";
    text[i] += c["text"].get<std::string>();
    for (const int32_t id : c["token_ids"]) ids[i].push_back(id);
    if (!c["finish_reason"].is_null()) ++finishes[i];
    // Each chunk's usage is its own choice's so far (vLLM's previous_num_tokens[i]).
    EXPECT_EQ(ev["usage"]["completion_tokens"], ids[i].size()) << e;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(text[i], answer["choices"][static_cast<size_t>(i)]["text"]) << "choice " << i;
    EXPECT_EQ(json(ids[i]), answer["choices"][static_cast<size_t>(i)]["token_ids"]) << "choice " << i;
    EXPECT_EQ(finishes[i], 1) << "choice " << i;
  }
  EXPECT_EQ(usage, answer["usage"]);
}

TEST_F(ServerTest, ChatChoicesStartWithARoleChunkEachAndGreedyChoicesAreEqual) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}},
                     {"max_tokens", 8}, {"temperature", 0}, {"n", 2}};
  const json answer = post_ok("/v1/chat/completions", chat);
  ASSERT_EQ(answer["choices"].size(), 2u);
  EXPECT_EQ(answer["choices"][0]["message"], answer["choices"][1]["message"]);
  EXPECT_EQ(answer["choices"][1]["index"], 1);
  json streamed = chat;
  streamed["stream"] = true;
  auto r = post("/v1/chat/completions", streamed.dump());
  ASSERT_TRUE(r);
  std::map<int, int> roles;
  std::map<int, std::string> text;
  for (const std::string& e : lg::test::sse_events(r->body)) {
    if (e == "[DONE]") continue;
    const json ev = json::parse(e);
    const json& c = ev["choices"][0];
    if (c["delta"].contains("role")) ++roles[c["index"].get<int>()];
    text[c["index"].get<int>()] += c["delta"].value("content", "");
  }
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(text[0], answer["choices"][0]["message"]["content"]);
  EXPECT_EQ(text[1], answer["choices"][1]["message"]["content"]);
}

}  // namespace
