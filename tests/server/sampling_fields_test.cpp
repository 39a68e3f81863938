// The penalties and min_p through lg serve (vLLM's and OpenAI's fields), and generation_config.json
// as the source of their defaults, as vLLM's `--generation-config auto` takes them:
//  - each field reaches the sampler: a request's token ids equal the runtime's generate() with
//    the same sampling on a cpu lane of the same model (the runtime is held to a loop written
//    from the definitions in tests/lanes_cpu/penalties_test.cpp), streamed text equals the
//    answer's, and a penalty changes the greedy answer;
//  - a copy of the model whose generation_config.json sets repetition_penalty, min_p and
//    max_new_tokens: requests that leave them out get them, requests that send them win;
//    completions keep OpenAI's default of 16 tokens, as vLLM's do.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/model_copy.h"
#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "server/server.h"
#include "server_test_fixture.h"

namespace {

using nlohmann::json;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::kContext;
using lg::test::ServerTest;

const std::string kModel = std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m";

/// The first `n` tokens the runtime generates after `prompt` with `sampling` on a cpu lane of the
/// 22M model at the suite's context, with no eos (the requests below send ignore_eos).
std::vector<int32_t> runtime_tokens(const std::vector<int32_t>& prompt, int64_t n,
                                    const lg::runtime::SamplingOptions& sampling) {
  lg::runtime::GenerateOptions o;
  o.max_new_tokens = n;
  o.sampling = sampling;
  return lg::test::runtime_generation(prompt, o).tokens;
}

/// A greedy completion of the golden prompt's ids, 16 tokens past any eos, with its ids.
json completion(const Golden& g, const json& fields) {
  json body = {{"prompt", g.prompt_ids}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true},
               {"return_token_ids", true}};
  body.update(fields);
  return body;
}

std::vector<int32_t> ids_of(const json& answer) { return answer["choices"][0]["token_ids"].get<std::vector<int32_t>>(); }

TEST_F(ServerTest, PenaltiesAndMinPReachTheSampler) {
  const Golden g = first_golden();
  const std::vector<int32_t> greedy(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  struct Case {
    json fields;
    lg::runtime::SamplingOptions sampling;
  };
  std::vector<Case> cases(5);
  cases[0].fields = {{"repetition_penalty", 1.3}};
  cases[0].sampling.penalties.repetition = 1.3;
  cases[1].fields = {{"presence_penalty", 0.8}, {"frequency_penalty", 0.6}};
  cases[1].sampling.penalties = {1, 0.8, 0.6};
  cases[2].fields = {{"repetition_penalty", 0.7}};  // < 1 favours repeats
  cases[2].sampling.penalties.repetition = 0.7;
  cases[3].fields = {{"temperature", 0.9}, {"seed", 11}, {"min_p", 0.2}, {"repetition_penalty", 1.1}};
  cases[3].sampling = {0.9, 0, 1, 11, 0.2, {1.1, 0, 0}};
  // min_p 1 leaves only the likeliest token: a hot sampled request answers greedily.
  cases[4].fields = {{"temperature", 1.5}, {"seed", 3}, {"min_p", 1}};
  cases[4].sampling = {1.5, 0, 1, 3, 1.0, {}};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].fields.dump());
    const json body = completion(g, cases[i].fields);
    const json answer = post_ok("/v1/completions", body);
    EXPECT_EQ(ids_of(answer), runtime_tokens(g.prompt_ids, 16, cases[i].sampling));
    EXPECT_EQ(post_stream("/v1/completions", body).first, answer["choices"][0]["text"]);
    if (i < 3) {
      EXPECT_NE(ids_of(answer), greedy) << "a penalty changes this greedy answer";
    }
    if (i == 4) {
      EXPECT_EQ(ids_of(answer), greedy);
    }
  }
  // Chat too: the same conversation with and without a penalty.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}},
                     {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}, {"return_token_ids", true}};
  json penalised = chat;
  penalised["repetition_penalty"] = 1.5;
  EXPECT_NE(ids_of(post_ok("/v1/chat/completions", chat)), ids_of(post_ok("/v1/chat/completions", penalised)));
}

// generation_config.json's repetition_penalty, min_p and max_new_tokens are the defaults of every
// request that leaves them out (vLLM's get_diff_sampling_param); a request's own value wins.
TEST_F(ServerTest, GenerationConfigDefaultsApplyAndARequestsOwnValueWins) {
  const Golden g = first_golden();
  const std::vector<int32_t> greedy(g.greedy_ids.begin(), g.greedy_ids.begin() + 16);
  const lg::test::ModelCopy m(kModel);
  m.edit_json("generation_config.json", [](json& j) {
    j["repetition_penalty"] = 1.3;
    j["min_p"] = 1.0;
    j["max_new_tokens"] = 7;
  });
  lg::server::EngineOptions eo;
  eo.max_seq = kContext;
  lg::server::Engine engine(m.dir.string(), eo);
  lg::server::Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  EXPECT_EQ(lg::model::sampling_defaults(engine.generation()), "min_p 1, repetition_penalty 1.3, max_new_tokens 7");

  lg::runtime::SamplingOptions penalised;
  penalised.penalties.repetition = 1.3;
  const std::vector<int32_t> want = runtime_tokens(g.prompt_ids, 16, penalised);
  ASSERT_NE(want, greedy);
  // The model's repetition_penalty applies to a greedy request that sends none; 1 turns it off.
  EXPECT_EQ(ids_of(post_ok("/v1/completions", completion(g, json::object()), port)), want);
  EXPECT_EQ(ids_of(post_ok("/v1/completions", completion(g, {{"repetition_penalty", 1}}), port)), greedy);
  EXPECT_EQ(ids_of(post_ok("/v1/completions", completion(g, {{"repetition_penalty", 1.3}}))), want);  // the plain model
  // The model's min_p 1 makes a sampled request greedy (over the penalised logits); min_p 0 does not.
  const json hot = {{"temperature", 1.5}, {"seed", 3}};
  EXPECT_EQ(ids_of(post_ok("/v1/completions", completion(g, hot), port)), want);
  json hot_off = hot;
  hot_off["min_p"] = 0;
  EXPECT_NE(ids_of(post_ok("/v1/completions", completion(g, hot_off), port)), want);

  // max_new_tokens is chat's default max_tokens; max_tokens and max_completion_tokens win.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}}, {"ignore_eos", true}};
  const json by_default = post_ok("/v1/chat/completions", chat, port);
  EXPECT_EQ(by_default["usage"]["completion_tokens"], 7);
  EXPECT_EQ(by_default["choices"][0]["finish_reason"], "length");
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    json asked = chat;
    asked[field] = 9;
    EXPECT_EQ(post_ok("/v1/chat/completions", asked, port)["usage"]["completion_tokens"], 9) << field;
  }
  // The same chat on the plain model with the config's values sent: the same answer.
  json explicit_values = chat;
  explicit_values["max_tokens"] = 7;
  explicit_values["repetition_penalty"] = 1.3;
  EXPECT_EQ(post_ok("/v1/chat/completions", explicit_values)["choices"][0]["message"],
            by_default["choices"][0]["message"]);
  // Completions keep OpenAI's default of 16 tokens, as vLLM's (its CompletionRequest sets it).
  json no_max = completion(g, json::object());
  no_max.erase("max_tokens");
  EXPECT_EQ(post_ok("/v1/completions", no_max, port)["usage"]["completion_tokens"], 16);
  // An explicit null is that default too, not generation_config.json's 7 nor the rest of the
  // context: vLLM's CompletionRequest.normalize_null_max_tokens replaces a null max_tokens by the
  // field's default (16) before serving_completion reads it (the OpenAI SDK sends unset as null).
  no_max["max_tokens"] = nullptr;
  EXPECT_EQ(post_ok("/v1/completions", no_max, port)["usage"]["completion_tokens"], 16);
  // Chat's null max_tokens / max_completion_tokens are its default, as absent ones (vLLM: None).
  json chat_null = chat;
  chat_null["max_tokens"] = nullptr;
  chat_null["max_completion_tokens"] = nullptr;
  EXPECT_EQ(post_ok("/v1/chat/completions", chat_null, port)["usage"]["completion_tokens"], 7);
}

}  // namespace
