// logit_bias (OpenAI's), min_tokens and stop_token_ids (vLLM's) through lg serve on the cpu lane of
// the 22M model, each against what the model's own logits say: a -100 bias on the greedy token
// gives the token its logprobs rank second; +100 makes a token every pick, sampled too; a stop
// token id ends the answer there (in token_ids, not in the text: the text of the tokens before
// it); min_tokens holds it back and keeps a stop string in the first tokens' text from matching.
// A token-id prompt ending inside a character, its completion forced by a bias, pins the text.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "server_test_fixture.h"

namespace {

using nlohmann::json;
using lg::test::first_golden;
using lg::test::Golden;
using lg::test::ServerTest;

json greedy_body(const Golden& g, int max_tokens, const json& fields) {
  json body = {{"prompt", g.prompt_ids}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true},
               {"return_token_ids", true}};
  body.update(fields);
  return body;
}

std::vector<int32_t> token_ids(const json& answer) {
  return answer["choices"][0]["token_ids"].get<std::vector<int32_t>>();
}

TEST_F(ServerTest, LogitBiasMovesThePickAsTheLogitsSay) {
  const Golden g = first_golden();
  // The model's two likeliest first tokens, from the logprobs of an unbiased request.
  const json ranked = post_ok("/v1/completions", greedy_body(g, 1, {{"logprobs", 2}, {"return_tokens_as_token_ids", true}}));
  const json& top = ranked["choices"][0]["logprobs"]["top_logprobs"][0];
  ASSERT_EQ(top.size(), 2u);
  std::vector<std::pair<double, int32_t>> two;
  for (const auto& [key, lp] : top.items()) two.emplace_back(lp.get<double>(), std::stoi(key.substr(9)));  // "token_id:ID"
  std::sort(two.rbegin(), two.rend());
  ASSERT_EQ(two[0].second, g.greedy_ids[0]);
  // -100 on the likeliest: the second is picked, streamed alike.
  const json banned = greedy_body(g, 1, {{"logit_bias", {{std::to_string(two[0].second), -100}}}});
  EXPECT_EQ(token_ids(post_ok("/v1/completions", banned))[0], two[1].second);
  // +100 on a token the answer does not hold: every pick, greedy and sampled.
  int32_t forced = 11;
  while (std::find(g.greedy_ids.begin(), g.greedy_ids.end(), forced) != g.greedy_ids.end()) ++forced;
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 0.8}, {"seed", 5}}}) {
    json body = greedy_body(g, 6, {{"logit_bias", {{std::to_string(forced), 100}}}});
    body.update(sampling);
    EXPECT_EQ(token_ids(post_ok("/v1/completions", body)), std::vector<int32_t>(6, forced)) << body.dump();
  }
  // Chat takes it too.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "def add(a, b):"}}}}, {"max_tokens", 3},
                     {"temperature", 0}, {"return_token_ids", true}, {"logit_bias", {{std::to_string(forced), 100}}}};
  EXPECT_EQ(post_ok("/v1/chat/completions", chat)["choices"][0]["token_ids"], json(std::vector<int32_t>(3, forced)));
}

TEST_F(ServerTest, StopTokenIdsEndTheAnswerAndMinTokensHoldsThemBack) {
  const Golden g = first_golden();
  ASSERT_GE(g.greedy_ids.size(), 16u);
  const int32_t stop_id = g.greedy_ids[3];
  const auto k = static_cast<size_t>(std::find(g.greedy_ids.begin(), g.greedy_ids.end(), stop_id) - g.greedy_ids.begin());
  // Ends at the first stop id (with ignore_eos too, as vLLM): its id in token_ids, its text not,
  // finish_reason "stop"; the text is the answer of the k tokens before it.
  const json stopped = post_ok("/v1/completions", greedy_body(g, 16, {{"stop_token_ids", {stop_id}}}));
  EXPECT_EQ(token_ids(stopped), std::vector<int32_t>(g.greedy_ids.begin(), g.greedy_ids.begin() + static_cast<long>(k) + 1));
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["choices"][0]["stop_reason"], stop_id);  // vLLM's: the id that stopped it
  if (k > 0) {
    const json before = post_ok("/v1/completions", greedy_body(g, static_cast<int>(k), json::object()));
    EXPECT_EQ(stopped["choices"][0]["text"], before["choices"][0]["text"]);
  }
  EXPECT_EQ(post_stream("/v1/completions", greedy_body(g, 16, {{"stop_token_ids", {stop_id}}})),
            (std::pair<std::string, std::string>{stopped["choices"][0]["text"], "stop"}));
  // min_tokens 6: no stop id among the first 6 tokens, the greedy prefix up to the first
  // occurrence kept, then the answer ends at the first stop id after them (or at max_tokens).
  const json held = post_ok("/v1/completions", greedy_body(g, 16, {{"stop_token_ids", {stop_id}}, {"min_tokens", 6}}));
  const std::vector<int32_t> ids = token_ids(held);
  ASSERT_GE(ids.size(), 7u);
  EXPECT_TRUE(std::equal(ids.begin(), ids.begin() + static_cast<long>(k), g.greedy_ids.begin()));
  EXPECT_EQ(std::find(ids.begin(), ids.begin() + 6, stop_id), ids.begin() + 6);
  const auto first_stop = std::find(ids.begin() + 6, ids.end(), stop_id);
  EXPECT_TRUE(first_stop == ids.end() ? ids.size() == 16u : first_stop + 1 == ids.end());
  EXPECT_EQ(held["choices"][0]["finish_reason"], first_stop == ids.end() ? "length" : "stop");
  // The runtime with the same request: the same tokens.
  lg::runtime::GenerateOptions o;
  o.max_new_tokens = 16;
  o.eos_ids = {stop_id};
  o.sampling.min_tokens = 6;
  o.sampling.min_tokens_held = {stop_id};
  EXPECT_EQ(ids, lg::test::runtime_generation(g.prompt_ids, o).tokens);
}

TEST_F(ServerTest, MinTokensKeepsAStopStringInTheFirstTokensFromMatching) {
  const Golden g = first_golden();
  const json whole = post_ok("/v1/completions", greedy_body(g, 8, json::object()));
  const std::string text = whole["choices"][0]["text"];
  const json first = post_ok("/v1/completions", greedy_body(g, 1, json::object()));
  const std::string stop = first["choices"][0]["text"];  // the first token's text
  ASSERT_FALSE(stop.empty());
  // Without min_tokens the answer stops before it at once; with min_tokens 8 the whole answer's
  // text is the first 8 tokens', where no stop may end: the text of the 8-token answer.
  const json cut = post_ok("/v1/completions", greedy_body(g, 8, {{"stop", stop}}));
  EXPECT_EQ(cut["choices"][0]["text"], "");
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut["choices"][0]["stop_reason"], stop);
  const json kept = post_ok("/v1/completions", greedy_body(g, 8, {{"stop", stop}, {"min_tokens", 8}}));
  EXPECT_EQ(kept["choices"][0]["text"], text);
  EXPECT_EQ(kept["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(kept["choices"][0]["stop_reason"].is_null());
  EXPECT_EQ(post_stream("/v1/completions", greedy_body(g, 8, {{"stop", stop}, {"min_tokens", 8}})).first, text);
}

// A token-id prompt may end inside a UTF-8 character: the 22M model's tokenizer writes `'鸝` as 364
// (`Ġ'`), 99202 (the character's first two bytes) and 251 (its last byte). With the prompt cut
// after 99202 and 251 forced, the completion's text is the whole character, the prompt's bytes
// included (docs/server.md), streamed or not; the next lone continuation byte is U+FFFD.
TEST_F(ServerTest, APromptEndingInsideACharacterGivesItWholeToTheCompletion) {
  const json body = {{"prompt", {750, 282, 4555, 470, 364, 99202}}, {"max_tokens", 2}, {"temperature", 0},
                     {"ignore_eos", true}, {"logit_bias", {{"251", 100}}}, {"return_token_ids", true}};
  const json answer = post_ok("/v1/completions", body);
  ASSERT_EQ(token_ids(answer), (std::vector<int32_t>{251, 251}));
  EXPECT_EQ(answer["choices"][0]["text"], "\xe9\xb8\x9d\xef\xbf\xbd");  // 鸝, then U+FFFD
  EXPECT_EQ(post_stream("/v1/completions", body).first, "\xe9\xb8\x9d\xef\xbf\xbd");
}

}  // namespace
