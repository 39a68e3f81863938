// The compiled lane on a GPU (skipped cleanly without one): the 22M Qwen3 model teacher-forced
// along the golden fp32 greedy tokens must pick the same token at every step whose recorded
// margin is above 0.1 (a smaller margin is a near tie that bf16 weights may flip), and its
// prefill logits must be within 2e-2 relative error (max |diff| / max |ref|) of the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"
#include "common/step_alone.h"

namespace lg {
namespace {

// $LG_SHARED_DIR overrides the build's path: the GPU machine gets a copy of the fixtures elsewhere.
const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;

TEST(CompiledLane, Pycode22mTeacherForcedMatchesGoldenAndReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", dir, {.max_seq = 256});
  auto ref = make_lane("cpu", dir, {.max_seq = 256});
  EXPECT_EQ(lane->name(), "compiled");
  std::ifstream f(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  auto golden = nlohmann::json::parse(f);
  int checked = 0;
  double worst_rel = 0;
  double decode_s = 0;
  int64_t decode_steps = 0;
  for (const auto& c : golden["cases"]) {
    auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    auto ids = c["fp32_cpu_greedy_ids"].get<std::vector<int32_t>>();
    auto margins = c["fp32_cpu_margins"].get<std::vector<double>>();
    SeqResult r = lg::testing::step_alone(*lane, prompt, 0, true);
    SeqResult want = lg::testing::step_alone(*ref, prompt, 0, true);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.logits.size(); ++i) {
      num = std::max(num, std::fabs(static_cast<double>(r.logits.at(i)) - want.logits[i]));
      den = std::max(den, std::fabs(static_cast<double>(want.logits[i])));
    }
    EXPECT_LT(num / den, 2e-2) << c["prompt"];
    worst_rel = std::max(worst_rel, num / den);
    auto pos = static_cast<int64_t>(prompt.size());
    for (size_t s = 0; s < ids.size(); ++s) {
      if (margins[s] > 0.1) {
        EXPECT_EQ(r.argmax, ids[s]) << c["prompt"] << " step " << s << " margin " << margins[s];
        ++checked;
      }
      if (s + 1 < ids.size()) {
        auto t0 = std::chrono::steady_clock::now();
        r = lg::testing::step_alone(*lane, std::vector<int32_t>{ids[s]}, pos++, false);
        decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++decode_steps;
      }
    }
  }
  EXPECT_GT(checked, 300);
  // What lg bench reports of the lane is its plan's count, as `lg compile --explain` prints it for
  // the 22M config (at most 6, issue 11).
  ASSERT_TRUE(lane->facts().launches_per_decode_layer.has_value());
  EXPECT_EQ(*lane->facts().launches_per_decode_layer, 6);
  std::cout << "compiled lane, 22M model: " << checked << " steps checked; worst prefill logits rel err "
            << worst_rel << "; decode "
            << 1e3 * decode_s / static_cast<double>(decode_steps) << " ms/token (step(), incl. the logits copy)\n";
}

// A prompt long enough for several 64-row query tiles and key tiles of the prefill attention and
// for cuBLASLt's tiled GEMMs (the golden prompts are short), then decode steps on top of it: the
// logits of both stay within the bf16 bound of the CPU reference's.
TEST(CompiledLane, LongPromptPrefillAndDecodeMatchReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", dir, {.max_seq = 512});
  auto ref = make_lane("cpu", dir, {.max_seq = 512});
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(dir.config.vocab_size - 1));
  std::vector<int32_t> prompt(333);
  for (auto& t : prompt) t = tok(rng);
  auto rel = [](const SeqResult& got, const SeqResult& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.logits.size(); ++i) {
      num = std::max(num, std::fabs(static_cast<double>(got.logits.at(i)) - want.logits[i]));
      den = std::max(den, std::fabs(static_cast<double>(want.logits[i])));
    }
    return num / den;
  };
  SeqResult got = lg::testing::step_alone(*lane, prompt, 0, true), want = lg::testing::step_alone(*ref, prompt, 0, true);
  EXPECT_LT(rel(got, want), 2e-2) << "prefill of " << prompt.size() << " tokens";
  for (int64_t s = 0; s < 4; ++s) {
    const std::vector<int32_t> next{want.argmax};
    got = lg::testing::step_alone(*lane, next, static_cast<int64_t>(prompt.size()) + s, true);
    want = lg::testing::step_alone(*ref, next, static_cast<int64_t>(prompt.size()) + s, true);
    EXPECT_LT(rel(got, want), 2e-2) << "decode step " << s;
  }
}

}  // namespace
}  // namespace lg
