// A checkpoint with one NaN weight makes every logit NaN; the cpu lane must say so at the step
// that produced them instead of returning an arbitrary argmax (which `lg run` printed as "!!!").
// The fixture tiny-qwen3 is copied and one element of model.norm.weight set to NaN in place.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/safetensors_patch.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "support/error.h"
#include "common/step_alone.h"

namespace lg {
namespace {

namespace fs = std::filesystem;

/// Copies fixtures/tiny-qwen3 to a fresh temp folder and writes NaN into element `index` of
/// `tensor`.
fs::path nan_copy(const std::string& tensor, uint64_t index) {
  const fs::path src = fs::path(LG_SHARED_DIR) / "fixtures/tiny-qwen3";
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
  for (bool want_logits : {false, true}) {
    try {
      lg::testing::step_alone(*lane, prompt, 0, want_logits);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("lane cpu: the prefill step at position 2 gave non-finite logits"), std::string::npos) << m;
      EXPECT_NE(m.find("lg inspect --check"), std::string::npos) << m;
    }
  }
  // A one-token prompt's step is its prefill as well.
  try {
    lg::testing::step_alone(*lane, std::vector<int32_t>{5}, 0, false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lane cpu: the prefill step at position 0 gave"), std::string::npos) << e.what();
  }
  // Greedy generation (what `lg run` does by default) stops with the error too.
  runtime::GenerateOptions o;
  o.max_new_tokens = 4;
  EXPECT_THROW(runtime::generate(*lane, prompt, o), Error);
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
