// The compiled lane on a GPU (skipped cleanly without one): the 22M Qwen3 model teacher-forced
// along the golden fp32 greedy tokens must pick the same token at every step whose recorded
// margin is above 0.1 (a smaller margin is a near tie that bf16 weights may flip), and its
// prefill logits must be within 2e-2 relative error (max |diff| / max |ref|) of the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"

namespace lg {
namespace {

// $LG_SHARED_DIR overrides the build's path: the GPU machine gets a copy of the fixtures elsewhere.
const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;

TEST(CompiledLane, Pycode22mTeacherForcedMatchesGoldenAndReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", dir, 256);
  auto ref = make_lane("cpu", dir, 256);
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
    lane->reset();
    ref->reset();
    StepResult r = lane->step(prompt, 0, true);
    StepResult want = ref->step(prompt, 0, true);
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
        r = lane->step(std::vector<int32_t>{ids[s]}, pos++, false);
        decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++decode_steps;
      }
    }
  }
  EXPECT_GT(checked, 300);
  std::cout << "compiled lane, 22M model: " << checked << " steps checked; worst prefill logits rel err "
            << worst_rel << "; decode "
            << 1e3 * decode_s / static_cast<double>(decode_steps) << " ms/token (step(), incl. the logits copy)\n";
}

}  // namespace
}  // namespace lg

namespace lg {
namespace {

// Speed at a real shape, on a checkpoint made on the GPU machine (random weights): run only when
// $LG_BENCH_MODEL_DIR names one. Prints prefill and decode times; asserts nothing about speed.
TEST(CompiledLane, SpeedAtRealShape) {
  const char* dir_env = std::getenv("LG_BENCH_MODEL_DIR");
  if (!dir_env) GTEST_SKIP() << "LG_BENCH_MODEL_DIR not set";
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto t_build = std::chrono::steady_clock::now();
  auto dir = model::ModelDir::open(dir_env);
  auto lane = make_lane("compiled", dir, 640);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_build).count();
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::vector<int32_t> prompt(512);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919) % 150000);
  lane->step(prompt, 0, false);  // warm-up
  lane->reset();
  auto t0 = now();
  int32_t next = lane->step(prompt, 0, false).argmax;
  double prefill_s = secs(t0, now());
  std::vector<double> steps;
  for (int i = 0; i < 64; ++i) {
    auto a = now();
    next = lane->step(std::span<const int32_t>(&next, 1), 512 + i, false).argmax;
    steps.push_back(secs(a, now()));
  }
  std::sort(steps.begin(), steps.end());
  std::cout << "compiled lane at " << dir_env << ": build (lift, NVRTC, upload) " << build_s << " s; prefill T=512 "
            << 1e3 * prefill_s << " ms; decode median " << 1e3 * steps[steps.size() / 2] << " ms/token (p10 "
            << 1e3 * steps[steps.size() / 10] << ", p90 " << 1e3 * steps[steps.size() * 9 / 10] << ")\n";
}

}  // namespace
}  // namespace lg
