// The acceptance check of lifting on the real programs: models/qwen3.lg and models/qwen2.lg
// lowered against every fixture config and the 22M model, lifted, fused, and run by the staged
// executor: its logits must equal the CPU reference executor's (relative error < 1e-5) over a
// prefill and decode steps. Also the fusion goal: at most 8 launches per decode layer (6 today).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lang/lower.h"
#include "lift/explain.h"
#include "model/checkpoint.h"
#include "runtime/bind_params.h"
#include "tiny_models.h"

namespace lg::lift::test {
namespace {

const std::string kShared = LG_SHARED_DIR;
const std::string kSource = LG_SOURCE_DIR;

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

struct Case {
  std::string lg, dir;
  std::vector<int32_t> prompt;
};

// Lowers, loads the weights as f32, and compares prefill + two decode steps (with the config of
// the checkpoint directory, or `config` when given).
void check_model(const Case& c, nlohmann::json config = nullptr) {
  SCOPED_TRACE(c.lg + " on " + c.dir);
  if (config.is_null()) config = read_json(c.dir + "/config.json");
  ir::Graph g = lang::lower_file(kSource + "/models/" + c.lg, config, lang::BindOptions{32});
  auto ckpt = model::Checkpoint::open(c.dir);
  std::vector<std::vector<float>> params;
  for (const auto& p : g.params) params.push_back(runtime::param_f32(ckpt, p));  // GPT-2's `.T` params transposed
  std::vector<std::vector<int32_t>> steps = {c.prompt, {c.prompt.back()}, {7}};
  EXPECT_LT(staged_vs_reference(g, params, steps), 1e-5);
}

std::vector<int32_t> golden_prompt(const std::string& file, size_t max_len) {
  auto ids = read_json(file)["cases"][0]["prompt_ids"].get<std::vector<int32_t>>();
  if (ids.size() > max_len) ids.resize(max_len);
  while (ids.size() < 3) ids.push_back(ids.back());  // a prefill of several tokens
  return ids;
}

TEST(LgModels, Qwen3FixturesStagedEqualsReference) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-untied-mqa"}) {
    std::string dir = kShared + "/fixtures/" + name;
    check_model({"qwen3.lg", dir, golden_prompt(dir + "/golden.json", 8)});
  }
}

TEST(LgModels, Qwen2FixtureStagedEqualsReference) {
  std::string dir = kShared + "/fixtures/tiny-qwen2";
  check_model({"qwen2.lg", dir, golden_prompt(dir + "/golden.json", 8)});
}

// The other families' programs on their transformers fixtures (tiny-llama3: llama3 RoPE scaling).
TEST(LgModels, OtherFamiliesStagedEqualsReference) {
  for (const auto& [lg, name] : std::vector<std::pair<std::string, std::string>>{
           {"llama.lg", "tiny-llama3"}, {"mistral.lg", "tiny-mistral"}, {"phi3.lg", "tiny-phi3"}, {"gpt2.lg", "tiny-gpt2"}}) {
    std::string dir = kShared + "/fixtures/" + name;
    check_model({lg, dir, golden_prompt(dir + "/golden.json", 8)});
  }
}

// Gemma 3: local layers with a sliding window of 8, so a prompt of 12 and the decode steps after
// it have keys leaving the window (and two RoPE bases, sandwich norms, (1 + w) norms, GELU-tanh).
TEST(LgModels, Gemma3FixtureStagedEqualsReference) {
  std::string dir = kShared + "/fixtures/tiny-gemma3";
  auto prompt = read_json(dir + "/golden.json")["cases"][2]["prompt_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(prompt.size(), 12u);
  prompt.resize(12);
  check_model({"gemma3_text.lg", dir, prompt});
}

// Mistral with a sliding window shorter than the sequence (no fixture has one in effect:
// tiny-mistral's is null, as in Mistral v0.2/v0.3), on tiny-mistral's weights.
TEST(LgModels, MistralSlidingWindowStagedEqualsReference) {
  std::string dir = kShared + "/fixtures/tiny-mistral";
  auto config = read_json(dir + "/config.json");
  config["sliding_window"] = 4;
  check_model({"mistral.lg", dir, {5, 81, 7, 300, 2, 44, 9, 13}}, config);
}

// Qwen3-MoE: the topk and experts stages (8 experts, top-2) equal the reference's routing.
TEST(LgModels, Qwen3MoeFixtureStagedEqualsReference) {
  std::string dir = kShared + "/fixtures/tiny-qwen3-moe";
  check_model({"qwen3_moe.lg", dir, golden_prompt(dir + "/golden.json", 8)});
}

TEST(LgModels, Qwen3Pycode22mStagedEqualsReference) {
  std::string dir = kShared + "/models/qwen3-pycode-22m";
  check_model({"qwen3.lg", dir, golden_prompt(kShared + "/fixtures/qwen3-pycode-22m-golden.json", 4)});
}

TEST(LgModels, Qwen3DecodeLayerTakesAtMostEightLaunches) {
  auto config = read_json(kShared + "/models/qwen3-pycode-22m/config.json");
  ir::Graph g = lang::lower_file(kSource + "/models/qwen3.lg", config, lang::BindOptions{64});
  StagedProgram p = lift(g);
  fuse(p);
  EXPECT_LE(launches_per_layer(p), 8) << explain(p);  // the bar
  // What the passes give today (docs/lifting.md): both RMSNorms are GEMM prologues.
  EXPECT_EQ(launches_per_layer(p), 6) << explain(p);
  // The LM head's stage covers the final norm and the head (the forward's return line) only: the
  // eps it shares with every layer's norms and the RoPE tables every layer shares are attributed
  // to no line. The line is looked up, so that comments added above it do not break the test.
  int head_line = 0;
  {
    std::ifstream in(kSource + "/models/qwen3.lg");
    std::string text;
    for (int n = 1; std::getline(in, text); ++n)
      if (text.find("return rms_norm(x, norm, eps) @ head.T") != std::string::npos) head_line = n;
  }
  ASSERT_GT(head_line, 0);
  const auto lines = stage_lines(p, p.stages.back());
  ASSERT_EQ(lines.size(), 1u) << explain(p);
  EXPECT_NE(lines[0].find("qwen3.lg:" + std::to_string(head_line)), std::string::npos) << lines[0];
}

// Qwen3-MoE's post-attention RMSNorm has two readers, the router GEMM and the experts: it is the
// router stage's prologue, and that stage stores the normed rows the experts read (one launch
// fewer a sparse layer: 8 -> 7 at the 30B-A3B shape). The staged executor runs that program in
// Qwen3MoeFixtureStagedEqualsReference.
TEST(LgModels, Qwen3MoeRouterStageStoresTheNormedRowsForTheExperts) {
  auto config = read_json(kSource + "/bench/shapes/qwen3-30b-a3b/config.json");
  ir::Graph g = lang::lower_file(kSource + "/models/qwen3_moe.lg", config, lang::BindOptions{64});
  StagedProgram p = lift(g);
  fuse(p);
  EXPECT_EQ(launches_per_layer(p), 7) << explain(p);
  int routers = 0;
  for (const Stage& st : p.stages) {
    if (st.kind != StageKind::Experts) continue;
    const auto moe = std::find_if(st.nodes.begin(), st.nodes.end(),
                                  [&](ir::ValueId v) { return p.graph.at(v).op == ir::Op::MoeGateUp; });
    if (moe == st.nodes.end()) continue;  // moe_down's stage
    // gate/up's activation is the normed row, computed by a Gemm stage that also runs a matmul on
    // it (the router) and reduces it (the RMSNorm): no Reduce stage of its own.
    const ir::ValueId h = p.graph.at(*moe).operands[0];
    const int32_t sh = p.stage_of[static_cast<size_t>(h)];
    ASSERT_GE(sh, 0);
    const Stage& router = p.stages[static_cast<size_t>(sh)];
    EXPECT_EQ(router.kind, StageKind::Gemm);
    EXPECT_NE(std::find(router.stores.begin(), router.stores.end(), h), router.stores.end());
    bool matmul = false, reduce = false;
    for (ir::ValueId v : router.nodes) {
      matmul = matmul || (p.graph.at(v).op == ir::Op::MatMul && p.graph.at(v).operands[0] == h);
      reduce = reduce || p.graph.at(v).op == ir::Op::ReduceSum;
    }
    EXPECT_TRUE(matmul && reduce) << explain(p);
    ++routers;
  }
  EXPECT_EQ(routers, 48);
}

}  // namespace
}  // namespace lg::lift::test
