// POST /tokenize and /detokenize (vLLM's, server/tokenize.h) through lg serve on the cpu lane of
// the 22M model: a text prompt tokenizes to the ids transformers' tokenizer made for it (the
// golden file's), a chat to the prompt the chat endpoint generates after (its usage), and ids
// decode back to the text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_test_fixture.h"

namespace {

using nlohmann::json;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::kContext;
using lg::test::ServerTest;

TEST_F(ServerTest, TokenizeGivesTheIdsACompletionIsGivenAndDetokenizeTheTextBack) {
  const Golden g = first_golden();
  const json t = post_ok("/tokenize", {{"prompt", g.prompt}});
  EXPECT_EQ(t["tokens"], json(g.prompt_ids));
  EXPECT_EQ(t["count"], g.prompt_ids.size());
  EXPECT_EQ(t["max_model_len"], kContext);
  EXPECT_TRUE(t["token_strs"].is_null());
  // vLLM's key order, and the tokens as tokenizer.json writes them (HF's convert_ids_to_tokens).
  const auto r = post("/tokenize", json({{"prompt", "def add(a, b):"}, {"return_token_strs", true}}).dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.rfind("{\"count\":", 0), 0u) << r->body;
  const json s = json::parse(r->body);
  EXPECT_EQ(s["token_strs"], json({"def", "Ġadd", "(a", ",", "Ġb", "):"})) << s;
  EXPECT_EQ(post_ok("/detokenize", {{"tokens", g.prompt_ids}})["prompt"], g.prompt);
  EXPECT_EQ(post_ok("/detokenize", {{"tokens", s["tokens"]}})["prompt"], "def add(a, b):");
  EXPECT_EQ(post_ok("/detokenize", {{"tokens", json::array()}})["prompt"], "");
  // Special tokens are kept (HF's decode default, vLLM's); the completion prompt counts as sent.
  EXPECT_EQ(post_ok("/detokenize", {{"tokens", {151644, 872}}})["prompt"], "<|im_start|>user");
  const json done = post_ok("/v1/completions", {{"prompt", g.prompt}, {"max_tokens", 1}});
  EXPECT_EQ(done["usage"]["prompt_tokens"], t["count"]);
  // A prompt longer than the context is counted, not refused (the client asks whether it fits).
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "x = x + " + std::to_string(i) + "\n";
  EXPECT_GT(post_ok("/tokenize", {{"prompt", long_text}})["count"].get<int64_t>(), kContext);
}

TEST_F(ServerTest, TokenizeAChatGivesThePromptTheChatEndpointGenerates) {
  const json messages = {{{"role", "system"}, {"content", "You write Python."}},
                         {{"role", "user"}, {"content", "def add(a, b):"}}};
  const json t = post_ok("/tokenize", {{"messages", messages}, {"return_token_strs", true}});
  const json chat = post_ok("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}});
  EXPECT_EQ(t["count"], chat["usage"]["prompt_tokens"]);
  const json strs = t["token_strs"];
  ASSERT_GE(strs.size(), 3u);
  EXPECT_EQ(strs[0], "<|im_start|>");
  // add_generation_prompt (vLLM's default true) ends it with the assistant's header.
  EXPECT_EQ(strs[strs.size() - 3], "<|im_start|>");
  EXPECT_EQ(strs[strs.size() - 2], "assistant");
  const json bare = post_ok("/tokenize", {{"messages", messages}, {"add_generation_prompt", false}});
  EXPECT_EQ(bare["count"].get<int64_t>(), t["count"].get<int64_t>() - 3);
  EXPECT_EQ(post_ok("/detokenize", {{"tokens", t["tokens"]}})["prompt"].get<std::string>().rfind("<|im_start|>system\n"
                                                                                                   "You write Python.",
                                                                                                   0),
            0u);
}

TEST_F(ServerTest, TokenizeAndDetokenizeRefuseBadBodiesNamingTheField) {
  expect_400("/tokenize", "{}", "prompt", "'prompt' or 'messages' is required");
  expect_400("/tokenize", R"({"prompt": "x", "messages": [{"role": "user", "content": "y"}]})", "prompt", "both");
  expect_400("/tokenize", R"({"prompt": 5})", "prompt", "must be a string");
  expect_400("/tokenize", R"({"prompt": "x", "add_special_tokens": "yes"})", "add_special_tokens", "boolean");
  expect_400("/tokenize", R"({"messages": []})", "messages", "empty");
  expect_400("/tokenize", R"({"messages": [{"role": "user"}]})", "messages[0].content");
  expect_400("/tokenize", "[1]", "", "JSON object");
  expect_400("/tokenize", "{", "", "not valid JSON");
  expect_400("/detokenize", "{}", "tokens", "required");
  expect_400("/detokenize", R"({"tokens": "5"})", "tokens", "array");
  expect_400("/detokenize", R"({"tokens": [5, -1]})", "tokens[1]", "[0, 151936)");
  expect_400("/detokenize", R"({"tokens": [151936]})", "tokens[0]", "[0, 151936)");
  expect_400("/detokenize", R"({"tokens": [1.5]})", "tokens[0]", "got 1.5");
  for (const char* path : {"/tokenize", "/detokenize"}) {
    const auto r = post(path, R"({"model": "other", "prompt": "x", "tokens": [1]})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path << " " << r->body;
  }
}

}  // namespace
