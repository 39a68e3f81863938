// The lowered qwen3.lg / qwen2.lg graphs, run by the CPU reference executor, against the logits
// Hugging Face transformers produced for the fixture models (fp32, CPU). This is the test that the
// .lg programs and their lowering (RoPE, RMSNorm, GQA, bias, tied head) mean what HF computes.
// Tolerance: relative error (norm of difference / norm of reference) below 1e-4, the bound of
// issue 4: both sides are fp32 and differ only in summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/cpu_executor.h"
#include "lang/lower.h"
#include "lang_test_paths.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::kSource;
using lg::lang_test::load_json;

/// The fixture checkpoints are F32 safetensors: read the params the graph asks for.
std::vector<lg::ir::cpu::Tensor> load_params(const std::string& path, const lg::ir::Graph& g) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  auto j = nlohmann::json::parse(header);
  std::vector<lg::ir::cpu::Tensor> out;
  for (const auto& p : g.params) {
    const auto& t = j.at(p.tensor);
    EXPECT_EQ(t["dtype"], "F32") << p.tensor;
    auto off = t["data_offsets"].get<std::vector<uint64_t>>();
    std::vector<float> data((off[1] - off[0]) / 4);
    in.seekg(static_cast<std::streamoff>(8 + n + off[0]));
    in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(off[1] - off[0]));
    out.push_back(lg::ir::cpu::Tensor::from_f32(t["shape"].get<std::vector<int64_t>>(), std::move(data)));
  }
  return out;
}

double rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    num += (got[k] - want[k]) * (got[k] - want[k]);
    den += want[k] * want[k];
  }
  return std::sqrt(num / den);
}

void check_fixture(const std::string& lg, const std::string& name) {
  SCOPED_TRACE(name);
  std::string dir = kShared + "/fixtures/" + name;
  lg::ir::Graph g = lg::lang::lower_file(kSource + "/models/" + lg, load_json(dir + "/config.json"), {.max_seq = 128});
  auto params = load_params(dir + "/model.safetensors", g);
  lg::ir::CpuExecutor exec(g, std::move(params));
  auto golden = load_json(dir + "/golden.json");
  int64_t V = g.at(g.outputs[0]).shape[1].coeff;
  for (const auto& c : golden["cases"]) {
    auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> pos(ids.size());
    for (size_t k = 0; k < pos.size(); ++k) pos[k] = static_cast<int32_t>(k);
    int64_t T = static_cast<int64_t>(ids.size());
    exec.reset();
    std::vector<lg::ir::cpu::Tensor> inputs = {lg::ir::cpu::Tensor::from_i32({T}, ids),
                                               lg::ir::cpu::Tensor::from_i32({T}, pos)};
    auto out = exec.run(inputs);
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> logits = out[0].to_f32();
    ASSERT_EQ(static_cast<int64_t>(logits.size()), T * V);
    std::vector<float> last(logits.end() - V, logits.end());
    EXPECT_LT(rel_err(last, c["prefill_last_logits"].get<std::vector<double>>()), 1e-4) << "prompt of " << T;
    auto head = c["prefill_first_logits_head"].get<std::vector<double>>();
    std::vector<float> first(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(head.size()));
    EXPECT_LT(rel_err(first, head), 1e-4);
  }
}

TEST(Golden, TinyQwen3PrefillMatchesTransformers) { check_fixture("qwen3.lg", "tiny-qwen3"); }
TEST(Golden, TinyQwen3UntiedMqaPrefillMatchesTransformers) { check_fixture("qwen3.lg", "tiny-qwen3-untied-mqa"); }
TEST(Golden, TinyQwen2PrefillMatchesTransformers) { check_fixture("qwen2.lg", "tiny-qwen2"); }

}  // namespace
