// The CPU loop (cpu_qwen_ref.h) the GPU lane is compared with, checked itself against the
// transformers fixtures (no GPU needed): fp32 prefill logits within 1e-5 relative (double
// accumulation against transformers' fp32: both are exact to ~1e-6), and the teacher-forced greedy
// tokens of every case after a prefill of the prompt without token id 0 (what `generate` attended to).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cpu_qwen_ref.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen::test;
namespace fs = std::filesystem;

class CpuReference : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuReference, MatchesTransformersFp32) {
  const fs::path dir = fs::path(shared_dir()) / "fixtures" / GetParam();
  auto md = model::ModelDir::open(dir);
  std::ifstream f(dir / "golden.json");
  auto golden = nlohmann::json::parse(f);
  int cases = 0, with_zero = 0;
  for (const auto& c : golden["cases"]) {
    CpuQwen cpu(md, false);
    auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    auto want = c["prefill_last_logits"].get<std::vector<double>>();
    auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();
    auto margins = c["argmax_margins"].get<std::vector<double>>();
    auto got = cpu.step(prompt, 0);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
    EXPECT_LT(std::sqrt(num / den), 1e-5) << GetParam() << " prompt " << prompt.size();
    // Greedy ids come from `generate`, which masked token id 0 as padding (test_util.h,
    // prompt_generate_attended): prefill what it attended to, then teacher-force.
    const std::vector<int32_t> attended = prompt_generate_attended(prompt);
    with_zero += attended.size() != prompt.size();
    CpuQwen gen(md, false);
    got = gen.step(attended, 0);
    ++cases;
    for (size_t i = 0; i < greedy.size(); ++i) {
      if (i > 0) got = gen.step({greedy[i - 1]}, static_cast<int64_t>(attended.size() + i - 1));
      if (margins[i] > 1e-3) {
        EXPECT_EQ(std::max_element(got.begin(), got.end()) - got.begin(), greedy[i]) << GetParam() << " step " << i;
      }
    }
  }
  EXPECT_GE(with_zero, 1) << "no case exercises the pad-id masking any more";
  EXPECT_GE(cases, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuReference, ::testing::Values("tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2"));
