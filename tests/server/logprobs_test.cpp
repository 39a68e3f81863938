// Log probabilities through lg serve, both endpoints, streamed or not (OpenAI's shapes, as vLLM
// fills them): each token's logprob and alternatives are the runtime's for the same request
// (runtime/logprobs.h, held to transformers' logits in tests/lanes_cpu/logprobs_test.cpp); asking
// for them does not change the tokens; a stream's chunks add up to the answer's logprobs.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "server/logprobs_json.h"
#include "server_test_fixture.h"

namespace {

using nlohmann::json;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::ServerTest;

/// The runtime's generation of `n` tokens after `prompt` on a cpu lane of the 22M model at the
/// suite's context, no eos, with `top` alternatives a token.
lg::runtime::Generation runtime_generation(const std::vector<int32_t>& prompt, int64_t n, int32_t top,
                                           const lg::runtime::SamplingOptions& sampling) {
  lg::runtime::GenerateOptions o;
  o.max_new_tokens = n;
  o.sampling = sampling;
  o.logprobs = top;
  return lg::test::runtime_generation(prompt, o);
}

/// The JSON number a float logprob becomes (json_logprob: the float as a double).
double as_json(float logprob) { return static_cast<double>(logprob); }

// Streamed chunks' logprobs, joined: completions' four arrays, or chat's content entries.
json joined_stream_logprobs(const std::string& body, bool chat) {
  json out = chat ? json::array() : json{{"tokens", json::array()}, {"token_logprobs", json::array()},
                                         {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const std::string& ev : lg::test::sse_events(body)) {
    if (ev == "[DONE]") continue;
    const json j = json::parse(ev);
    if (j["choices"].empty()) continue;
    const json& lp = j["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    if (chat) {
      for (const json& e : lp["content"]) out.push_back(e);
    } else {
      for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
        for (const json& e : lp[k]) out[k].push_back(e);
    }
  }
  return out;
}

TEST_F(ServerTest, CompletionLogprobsAreTheRuntimesAndLeaveTheTokensAlone) {
  const Golden g = first_golden();
  const auto& tok = engine_->tokenizer();
  for (const double temperature : {0.0, 0.9}) {
    SCOPED_TRACE("temperature " + std::to_string(temperature));
    json body = {{"prompt", g.prompt_ids}, {"max_tokens", 12}, {"temperature", temperature}, {"seed", 5},
                 {"ignore_eos", true}, {"return_token_ids", true}};
    const json plain = post_ok("/v1/completions", body)["choices"][0];
    EXPECT_TRUE(plain["logprobs"].is_null());
    body["logprobs"] = 3;
    const json choice = post_ok("/v1/completions", body)["choices"][0];
    const auto ids = choice["token_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids, plain["token_ids"].get<std::vector<int32_t>>()) << "asking for logprobs changed the tokens";
    lg::runtime::SamplingOptions sampling;
    sampling.temperature = temperature;
    sampling.seed = 5;
    const lg::runtime::Generation want = runtime_generation(g.prompt_ids, 12, 3, sampling);
    ASSERT_EQ(ids, want.tokens);
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), ids.size());
    std::string joined;
    for (size_t i = 0; i < ids.size(); ++i) {
      SCOPED_TRACE("token " + std::to_string(i));
      const int32_t one[] = {ids[i]};
      const std::string text = tok.decode(one);
      EXPECT_EQ(lp["tokens"][i], text);
      EXPECT_EQ(lp["token_logprobs"][i].get<double>(), as_json(want.logprobs[i].chosen.logprob));
      // The chosen token first, then the 3 likeliest: 3 or 4 texts (the chosen may be one of them).
      const json& top = lp["top_logprobs"][i];
      EXPECT_EQ(top[text].get<double>(), as_json(want.logprobs[i].chosen.logprob));
      for (const auto& alt : want.logprobs[i].top) {
        const int32_t a[] = {alt.id};
        EXPECT_EQ(top[tok.decode(a)].get<double>(), as_json(alt.logprob));
      }
      EXPECT_GE(top.size(), 3u);
      EXPECT_LE(top.size(), 4u);
      if (temperature == 0) {
        EXPECT_EQ(want.logprobs[i].top[0].id, ids[i]) << "greedy picks the likeliest";
      }
      // Offsets in characters of the text, each token's after the ones before it.
      EXPECT_EQ(lp["text_offset"][i].get<int64_t>(),
                static_cast<int64_t>(std::count_if(joined.begin(), joined.end(),
                                                   [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; })));
      joined += text;
    }
    EXPECT_EQ(joined, choice["text"]) << "the tokens' texts make the answer";
    body["stream"] = true;
    auto r = post("/v1/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(joined_stream_logprobs(r->body, false), lp) << "a stream's chunks add up to the answer's logprobs";
  }
}

TEST_F(ServerTest, ChatLogprobsCarryTheBytesAndTheLikeliest) {
  const auto& tok = engine_->tokenizer();
  json body = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}},
               {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}, {"return_token_ids", true},
               {"logprobs", true}, {"top_logprobs", 2}};
  const json choice = post_ok("/v1/chat/completions", body)["choices"][0];
  const auto ids = choice["token_ids"].get<std::vector<int32_t>>();
  const json& content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), ids.size());
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE("token " + std::to_string(i));
    const json& e = content[i];
    const int32_t one[] = {ids[i]};
    EXPECT_EQ(e["token"], tok.decode(one));
    ASSERT_EQ(e["top_logprobs"].size(), 2u);
    // Greedy: the token is the likeliest, and the likeliest first.
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    for (const json& b : e["bytes"]) bytes += static_cast<char>(b.get<int>());
  }
  // The raw bytes, joined, are the tokens' text (a character two tokens split is whole again).
  EXPECT_EQ(bytes, tok.decode(ids));
  body["stream"] = true;
  auto r = post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(joined_stream_logprobs(r->body, true), content);
  // top_logprobs 0 (or left out) with logprobs: the chosen token's alone.
  body["stream"] = false;
  body["top_logprobs"] = 0;
  const json alone = post_ok("/v1/chat/completions", body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(alone.size(), ids.size());
  EXPECT_TRUE(alone[0]["top_logprobs"].empty());
  EXPECT_EQ(alone[0]["logprob"], content[0]["logprob"]);
}

// vLLM's return_tokens_as_token_ids: each token shown as "token_id:ID" (it was accepted and
// ignored, the texts shown).
TEST_F(ServerTest, TokensAsTokenIdsShowEachTokensId) {
  const Golden g = first_golden();
  const json body = {{"prompt", g.prompt_ids}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true},
                     {"return_token_ids", true}, {"logprobs", 2}, {"return_tokens_as_token_ids", true}};
  const json choice = post_ok("/v1/completions", body)["choices"][0];
  const auto ids = choice["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(choice["logprobs"]["tokens"].size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(choice["logprobs"]["tokens"][i], "token_id:" + std::to_string(ids[i]));
  json chat = {{"messages", {{{"role", "user"}, {"content", "x = "}}}}, {"max_tokens", 2}, {"temperature", 0},
               {"return_token_ids", true}, {"logprobs", true}, {"return_tokens_as_token_ids", true}};
  const json c = post_ok("/v1/chat/completions", chat)["choices"][0];
  EXPECT_EQ(c["logprobs"]["content"][0]["token"], "token_id:" + std::to_string(c["token_ids"][0].get<int32_t>()));
  chat["return_tokens_as_token_ids"] = "yes";
  expect_400("/v1/chat/completions", chat.dump(), "return_tokens_as_token_ids", "must be a boolean");
}

// text_offset counts the answer's text: a special token that skip_special_tokens leaves out of it
// moves no later offset (they pointed 13 characters past their tokens after an <|endoftext|>).
TEST_F(ServerTest, ASkippedSpecialTokenMovesNoTextOffset) {
  const auto& tok = engine_->tokenizer();
  const auto eos = tok.token_to_id("<|endoftext|>");
  const auto word = tok.token_to_id("from");
  ASSERT_TRUE(eos && word);
  std::vector<lg::runtime::TokenLogprobs> tokens(3);
  tokens[0].chosen = {*word, -0.5f};
  tokens[1].chosen = {*eos, -1.f};
  tokens[2].chosen = {*word, -0.25f};
  int64_t offset = 0;
  const json skipped = lg::server::completion_logprobs(&tok, tokens, /*skip_special=*/true, offset);
  EXPECT_EQ(skipped["text_offset"], json({0, 4, 4}));
  EXPECT_EQ(offset, 8);
  EXPECT_EQ(skipped["tokens"], json({"from", "<|endoftext|>", "from"}));
  offset = 0;
  const json shown = lg::server::completion_logprobs(&tok, tokens, /*skip_special=*/false, offset);
  EXPECT_EQ(shown["text_offset"], json({0, 4, 17}));
}

}  // namespace
