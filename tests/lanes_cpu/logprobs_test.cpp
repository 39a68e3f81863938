// A request's log probabilities on the cpu lane against transformers: the first generated token's
// logprobs are log_softmax of the prefill's last logits, which the fixtures hold as transformers
// computed them (fp32). runtime/logprobs.h's arithmetic alone is tested in tests/runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "common/repo_dirs.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/generate.h"

namespace lg {
namespace {

std::vector<double> log_softmax(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (const double v : x) sum += std::exp(v - m);
  std::vector<double> out;
  for (const double v : x) out.push_back(v - m - std::log(sum));
  return out;
}

class FixtureLogprobs : public ::testing::TestWithParam<std::string> {};

// Both sides are fp32 and differ by summation order: the logprobs measured 1.3e-6 apart at most
// (three fixtures, both temperatures). 1e-4 leaves that room and still catches a log-softmax of
// the wrong row, of penalised or tempered logits, or a wrong normalisation (each moves a logprob
// by far more). Ranks are compared where two logits are further apart than the logits' own
// agreement (1e-4 of the row's norm, fixtures_test.cpp).
TEST_P(FixtureLogprobs, FirstTokensLogprobsAreLogSoftmaxOfTransformersLogits) {
  const std::string dir_path = kShared + "/fixtures/" + GetParam();
  const model::ModelDir dir = model::ModelDir::open(dir_path);
  auto lane = make_cpu_lane_concrete(dir, {.max_seq = 0});
  std::ifstream in(dir_path + "/golden.json");
  const nlohmann::json golden = nlohmann::json::parse(in);
  for (size_t c = 0; c < golden["cases"].size(); ++c) {
    const auto& cs = golden["cases"][c];
    SCOPED_TRACE("case " + std::to_string(c));
    const auto prompt = cs["prompt_ids"].get<std::vector<int32_t>>();
    const std::vector<double> want = log_softmax(cs["prefill_last_logits"].get<std::vector<double>>());
    const auto bound = 1e-4 * std::sqrt(std::inner_product(want.begin(), want.end(), want.begin(), 0.0));
    for (const double temperature : {0.0, 0.8}) {
      runtime::GenerateOptions o;
      o.max_new_tokens = 2;
      o.logprobs = 5;
      o.sampling.temperature = temperature;  // raw logprobs: the temperature does not change them
      o.sampling.seed = 7;
      const runtime::Generation g = runtime::generate(*lane, prompt, o);
      ASSERT_EQ(g.logprobs.size(), g.tokens.size());
      const runtime::TokenLogprobs& first = g.logprobs[0];
      EXPECT_EQ(first.chosen.id, g.tokens[0]);
      EXPECT_NEAR(first.chosen.logprob, want[static_cast<size_t>(first.chosen.id)], 1e-4);
      ASSERT_EQ(first.top.size(), 5u);
      for (size_t k = 0; k < first.top.size(); ++k) {
        const auto id = static_cast<size_t>(first.top[k].id);
        EXPECT_NEAR(first.top[k].logprob, want[id], 1e-4) << "rank " << k;
        // Ranked as transformers ranks them, but where two logits are closer than the error bound.
        if (k > 0) {
          EXPECT_GE(want[static_cast<size_t>(first.top[k - 1].id)], want[id] - 2 * bound) << "rank " << k;
        }
      }
      if (temperature == 0) {
        EXPECT_EQ(first.chosen.id, first.top[0].id) << "greedy picks the likeliest";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, FixtureLogprobs, ::testing::Values("tiny-qwen3", "tiny-llama3", "tiny-gpt2"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace lg
