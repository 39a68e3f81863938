// A program that is not Qwen (models/examples/cc_mlp.lg: LayerNorm with bias, GELU-tanh MLP, no
// attention) lifts with the same passes and runs on the staged executor equal to the reference;
// editing one statement of it changes the stages.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "lang/lower.h"
#include "lift/explain.h"
#include "tiny_models.h"

namespace lg::lift::test {
namespace {

const std::string kFile = std::string(LG_SOURCE_DIR) + "/models/examples/cc_mlp.lg";
const nlohmann::json kConfig = {
    {"vocab_size", 50}, {"hidden_size", 32}, {"intermediate_size", 64}, {"num_hidden_layers", 2}, {"layer_norm_eps", 1e-5}};

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ir::Graph lower_text(const std::string& text) {
  auto out = lang::check_source("cc_mlp.lg", text, kConfig, lang::BindOptions{16});
  EXPECT_TRUE(out.ok) << out.rendered;
  return out.report.graph;
}

StagedProgram staged(const ir::Graph& g) {
  StagedProgram p = lift(g);
  fuse(p);
  return p;
}

TEST(ExampleModels, MlpWithLayerNormLiftsAndRunsLikeTheReference) {
  ir::Graph g = lower_text(read(kFile));
  StagedProgram p = staged(g);
  // gather | per layer: LayerNorm (two reductions, one stage), fc1 + bias + GELU, fc2 + bias +
  // residual | final LayerNorm | head.
  EXPECT_EQ(p.stages.size(), 1u + 3u * 2u + 2u) << explain(p);
  EXPECT_EQ(launches_per_layer(p), 3) << explain(p);
  EXPECT_EQ(p.stages[1].kind, StageKind::Reduce);
  EXPECT_LT(staged_vs_reference(g, random_params(g, 11), {{1, 2, 3, 40, 5}, {6}, {49}}), 1e-5);
}

TEST(ExampleModels, EditingAStatementChangesTheStages) {
  std::string text = read(kFile);
  std::string before = explain(staged(lower_text(text)));
  // Drop the residual of the MLP: the fc2 GEMM's epilogue loses its add of x.
  std::string edit = text;
  const std::string stmt = "x = x + gelu_tanh(h @ l.w1.T + l.b1) @ l.w2.T + l.b2";
  ASSERT_NE(edit.find(stmt), std::string::npos);
  edit.replace(edit.find(stmt), stmt.size(), "x = gelu_tanh(h @ l.w1.T + l.b1) @ l.w2.T + l.b2");
  std::string after = explain(staged(lower_text(edit)));
  EXPECT_NE(before, after);
  // Normalise without LayerNorm: the reduce stage of each layer disappears.
  std::string no_norm = text;
  const std::string norm = "h = layer_norm(x, l.ln_w, l.ln_b, eps)";
  no_norm.replace(no_norm.find(norm), norm.size(), "h = x * l.ln_w + l.ln_b");
  ir::Graph g = lower_text(no_norm);
  StagedProgram p = staged(g);
  EXPECT_EQ(p.stages.size(), 1u + 2u * 2u + 2u) << explain(p);
  EXPECT_LT(staged_vs_reference(g, random_params(g, 12), {{1, 2, 3}, {4}}), 1e-5);
}

}  // namespace
}  // namespace lg::lift::test
