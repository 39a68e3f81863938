// lg serve without a tokenizer, as `lg serve --shape` runs random weights on the GPU: prompts and
// answers are token ids. Checked on the cpu lane with shared/fixtures/tiny-qwen3 (no
// tokenizer.json): the ids streamed and answered are the greedy ids transformers produced for its
// golden prompts (up to the first near tie); text prompts, chat and stop strings are a 400 that
// says why.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "lanes/factory.h"
#include "model/model_dir.h"
#include "server/server.h"

namespace {

using nlohmann::json;
using namespace lg::server;

class TokenOnlyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new lg::model::ModelDir(lg::model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3"));
    lg::LaneOptions lo;
    lo.max_seq = 256;
    engine_ = new Engine(lg::make_lane("cpu", *dir_, lo), dir_->config, "tiny-random", EngineOptions{});
    server_ = new Server(*engine_, {"127.0.0.1", 0});
    port_ = server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete engine_;
    delete dir_;
  }
  static httplib::Result post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  static void expect_400(const std::string& path, const json& body, const std::string& param,
                         const std::string& in_message) {
    auto r = post(path, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["param"], param) << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r->body;
  }

  static inline lg::model::ModelDir* dir_ = nullptr;
  static inline Engine* engine_ = nullptr;
  static inline Server* server_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(TokenOnlyTest, IdsInIdsOutAsTransformersGreedy) {
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3/golden.json");
  const json golden = json::parse(f);
  ASSERT_FALSE(engine_->has_tokenizer());
  size_t compared = 0;
  for (const auto& c : golden["cases"]) {
    // As tests/lanes_cpu/fixtures_test.cpp: transformers' generate masked id 0 (its pad id) out
    // of the prompt, and a step whose argmax margin is a near tie (<= 1e-3) is not compared.
    json prompt = json::array();
    for (const auto& id : c["prompt_ids"])
      if (id != 0) prompt.push_back(id);
    json want = json::array();
    for (size_t s = 0; s < c["greedy_ids"].size() && c["argmax_margins"][s] > 1e-3; ++s) want.push_back(c["greedy_ids"][s]);
    compared += want.size();
    const json body = {{"prompt", prompt}, {"max_tokens", want.size()}, {"temperature", 0}};
    auto r = post("/v1/completions", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["model"], "tiny-random");
    EXPECT_EQ(j["choices"][0]["token_ids"], want) << prompt;
    EXPECT_EQ(j["choices"][0]["text"], "");
    EXPECT_EQ(j["usage"]["completion_tokens"], want.size());

    json sbody = body;
    sbody["stream"] = true;
    auto s = post("/v1/completions", sbody);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200) << s->body;
    json streamed = json::array();
    size_t pos = 0;
    while ((pos = s->body.find("data: {", pos)) != std::string::npos) {
      const size_t end = s->body.find("\n\n", pos);
      const json chunk = json::parse(s->body.substr(pos + 6, end - pos - 6));
      for (const auto& id : chunk["choices"][0]["token_ids"]) streamed.push_back(id);
      pos = end;
    }
    EXPECT_EQ(streamed, want);
  }
  EXPECT_GE(compared, 72u) << "near ties cut the comparison short";  // 73 of the 96 steps
}

TEST_F(TokenOnlyTest, TextChatAndStopStringsAre400) {
  expect_400("/v1/completions", {{"prompt", "def f():"}}, "prompt", "must be token ids");
  expect_400("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, "messages",
             "send token ids to /v1/completions");
  expect_400("/v1/completions", {{"prompt", {1, 2}}, {"stop", "x"}}, "stop", "needs a tokenizer");
  expect_400("/v1/completions", {{"prompt", {1, 512}}}, "prompt[1]", "vocabulary of 512 ids");
  expect_400("/tokenize", {{"prompt", "def f():"}}, "prompt", "/tokenize needs a tokenizer");
  expect_400("/detokenize", {{"tokens", {1, 2}}}, "tokens", "/detokenize needs a tokenizer");
}

}  // namespace
