// A checkpoint with a NaN weight makes logits NaN; the cpu lane marks the row (argmax -1) and the
// request fails naming the step, instead of an arbitrary argmax (which `lg run` printed as "!!!"),
// and only that request: the others of its steps get their tokens. Fixtures are copied and one
// element of a tensor set to NaN in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/safetensors_patch.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "support/error.h"
#include "common/step_alone.h"

namespace lg {
namespace {

namespace fs = std::filesystem;

/// Copies fixtures/`fixture` to a fresh temp folder and writes NaN into element `index` of
/// `tensor`.
fs::path nan_copy(const std::string& tensor, uint64_t index, const std::string& fixture = "tiny-qwen3") {
  const fs::path src = fs::path(LG_SHARED_DIR) / "fixtures" / fixture;
  const fs::path dst = fs::temp_directory_path() / ("lg_nan_model_" + std::to_string(std::random_device{}()));
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) fs::copy_file(src / f, dst / f);
  test::put_nan(dst / "model.safetensors", tensor, index);
  return dst;
}

TEST(CpuLaneNonFinite, NanWeightIsAnErrorAtTheFirstStep) {
  const fs::path dir = nan_copy("model.norm.weight", 3);
  const auto model = model::ModelDir::open(dir);
  auto lane = make_cpu_lane(model, {.max_seq = 16});
  const std::vector<int32_t> prompt{5, 9, 2};
  // The lane marks the row (argmax -1) and leaves the error to the request's scheduler.
  for (bool want_logits : {false, true}) {
    const SeqResult r = lg::testing::step_alone(*lane, prompt, 0, want_logits);
    EXPECT_EQ(r.argmax, -1);
    EXPECT_EQ(r.logits.size(), want_logits ? 512u : 0u);
  }
  // Greedy generation (what `lg run` does by default) stops with the error naming the step; a
  // one-token prompt's step is its prefill as well.
  for (const auto& [p, what] : std::vector<std::pair<std::vector<int32_t>, std::string>>{
           {prompt, "lane cpu: the prefill step at position 2 gave non-finite logits"},
           {{5}, "lane cpu: the prefill step at position 0 gave non-finite logits"}}) {
    runtime::GenerateOptions o;
    o.max_new_tokens = 4;
    try {
      runtime::generate(*lane, p, o);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(what), std::string::npos) << m;
      EXPECT_NE(m.find("lg inspect --check"), std::string::npos) << m;
    }
  }
  fs::remove_all(dir);
}

// One request whose forward is not finite (a NaN in the embedding row of a token only its prompt
// holds) fails alone: the requests in the same steps get exactly the tokens they get alone
// (greedy and sampled, before and after it), as vLLM's requests do not share a fate.
TEST(CpuLaneNonFinite, ARequestWithNonFiniteLogitsFailsAloneInItsBatch) {
  const int32_t bad_token = 7;
  // Untied: tiny-qwen3's LM head is its embedding, where the NaN would reach every row's logits.
  const fs::path dir =
      nan_copy("model.embed_tokens.weight", static_cast<uint64_t>(bad_token) * 64 + 11, "tiny-qwen3-untied-mqa");
  const auto model = model::ModelDir::open(dir);
  auto lane = make_cpu_lane(model, {.max_seq = 32, .max_batch = 8});
  struct Case {
    std::vector<int32_t> prompt;
    float temperature;
  };
  const std::vector<Case> cases{{{20, 21, 22}, 0.f}, {{30, 31, bad_token}, 0.f}, {{11, 12, 13, 14}, 0.9f},
                                {{bad_token, 40}, 0.9f}, {{200, 201}, 0.f}};
  auto options = [](const Case& c) {
    runtime::GenerateOptions o;
    o.max_new_tokens = 6;
    o.sampling.temperature = c.temperature;
    o.sampling.seed = 1234;
    return o;
  };
  std::vector<runtime::Generation> got(cases.size());
  std::vector<std::string> errors(cases.size(), "(not done)");
  runtime::Scheduler sched(*lane);
  for (size_t i = 0; i < cases.size(); ++i) {
    runtime::Request r;
    r.prompt = cases[i].prompt;
    r.options = options(cases[i]);
    r.on_done = [&, i](runtime::Generation&& g, const std::string& error) {
      got[i] = std::move(g);
      errors[i] = error;
    };
    sched.submit(std::move(r));
  }
  sched.run();
  for (size_t i = 0; i < cases.size(); ++i) {
    const bool bad = std::find(cases[i].prompt.begin(), cases[i].prompt.end(), bad_token) != cases[i].prompt.end();
    if (bad) {
      EXPECT_NE(errors[i].find("gave non-finite logits"), std::string::npos) << i << ": " << errors[i];
      EXPECT_EQ(got[i].stats.stop, "error") << i;
      continue;
    }
    ASSERT_EQ(errors[i], "") << i;
    const runtime::Generation alone = runtime::generate(*lane, cases[i].prompt, options(cases[i]));
    ASSERT_EQ(std::count(alone.tokens.begin(), alone.tokens.end(), bad_token), 0) << i << ": pick another bad token";
    EXPECT_EQ(got[i].tokens, alone.tokens) << i;
  }
  fs::remove_all(dir);
}

TEST(CpuLaneNonFinite, TheUnpatchedFixtureRuns) {
  const auto model = model::ModelDir::open(fs::path(LG_SHARED_DIR) / "fixtures/tiny-qwen3");
  auto lane = make_cpu_lane(model, {.max_seq = 16});
  runtime::GenerateOptions o;
  o.max_new_tokens = 4;
  EXPECT_EQ(runtime::generate(*lane, std::vector<int32_t>{5, 9, 2}, o).tokens.size(), 4u);
}

}  // namespace
}  // namespace lg
