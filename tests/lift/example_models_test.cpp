// A program that is not Qwen (models/examples/cc_mlp.lg: LayerNorm with bias, GELU-tanh MLP, no
// attention) lifts with the same passes and runs on the staged executor equal to the reference;
// editing one statement of it changes the stages. gelu_mlp.lg (exact GELU through `erf`) runs on
// the reference as std::erf says.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "lang/lower.h"
#include "lift/explain.h"
#include "support/error.h"
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

// Reduction nodes computed by the stages (not inline).
int reductions(const StagedProgram& p) {
  int n = 0;
  for (const Stage& st : p.stages)
    for (ir::ValueId v : st.nodes) n += ir::is_reduce(p.graph.at(v).op) ? 1 : 0;
  return n;
}

StagedProgram staged(const ir::Graph& g) {
  StagedProgram p = lift(g);
  fuse(p);
  return p;
}

TEST(ExampleModels, MlpWithLayerNormLiftsAndRunsLikeTheReference) {
  ir::Graph g = lower_text(read(kFile));
  StagedProgram p = staged(g);
  // gather | per layer: LayerNorm (two reductions) as the prologue of fc1 + bias + GELU, fc2 +
  // bias + residual | final LayerNorm as the prologue of the head.
  EXPECT_EQ(p.stages.size(), 1u + 2u * 2u + 1u) << explain(p);
  EXPECT_EQ(launches_per_layer(p), 2) << explain(p);
  EXPECT_EQ(p.stages[1].kind, StageKind::Gemm);
  EXPECT_EQ(reductions(p), 2 * 3) << explain(p);
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
  // Normalise without LayerNorm: the reductions of each layer's prologue disappear; the final
  // LayerNorm's stay.
  std::string no_norm = text;
  const std::string norm = "h = layer_norm(x, l.ln_w, l.ln_b, eps)";
  no_norm.replace(no_norm.find(norm), norm.size(), "h = x * l.ln_w + l.ln_b");
  ir::Graph g = lower_text(no_norm);
  StagedProgram p = staged(g);
  EXPECT_EQ(p.stages.size(), 1u + 2u * 2u + 1u) << explain(p);
  EXPECT_EQ(reductions(p), 2) << explain(p);
  EXPECT_LT(staged_vs_reference(g, random_params(g, 12), {{1, 2, 3}, {4}}), 1e-5);
}

TEST(ExampleModels, Gpt2LiftsAndRunsLikeTheReference) {
  // models/gpt2.lg (the language engineer's): fused qkv, learned positions, LayerNorm, GELU.
  nlohmann::json config = {{"model_type", "gpt2"}, {"vocab_size", 300}, {"n_embd", 48}, {"n_head", 3}, {"n_layer", 2},
                           {"n_positions", 128}, {"layer_norm_epsilon", 1e-5}, {"torch_dtype", "float32"}};
  ir::Graph g = lang::lower_file(std::string(LG_SOURCE_DIR) + "/models/gpt2.lg", config, lang::BindOptions{16});
  StagedProgram p = staged(g);
  EXPECT_LE(launches_per_layer(p), 8) << explain(p);
  EXPECT_LT(staged_vs_reference(g, random_params(g, 13), {{1, 2, 3, 299, 5}, {6}, {7}}), 1e-5);
}

// models/examples/gelu_mlp.lg: exact GELU through the `erf` primitive. The CPU reference equals
// the model written out here in double with std::erf (fp32 sums over K <= 64 terms of magnitude
// < 1 stay within 1e-5 of the output's scale), and the staged program equals the reference.
TEST(ExampleModels, ExactGeluWithErfRunsLikeStdErf) {
  const nlohmann::json config = {
      {"vocab_size", 40}, {"hidden_size", 16}, {"intermediate_size", 24}, {"num_hidden_layers", 2}, {"max_position_embeddings", 16}};
  auto out = lang::check_source("gelu_mlp.lg", read(std::string(LG_SOURCE_DIR) + "/models/examples/gelu_mlp.lg"), config,
                                lang::BindOptions{16});
  ASSERT_TRUE(out.ok) << out.rendered;
  const ir::Graph& g = out.report.graph;
  EXPECT_EQ(std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) { return n.op == ir::Op::Erf; }), 2);
  const auto params = random_params(g, 21, 0.5f);
  std::map<std::string, const std::vector<float>*> w;
  for (size_t i = 0; i < params.size(); ++i) w[g.params[i].tensor] = &params[i];
  const int64_t V = 40, D = 16, F = 24;
  const std::vector<int32_t> tokens = {3, 17, 39};
  // The forward in double: x = embed[t]; x += gelu(x W1^T) W2^T per layer; logits = x head^T.
  std::vector<double> want;
  for (int32_t t : tokens) {
    std::vector<double> x(D);
    for (int64_t d = 0; d < D; ++d) x[d] = (*w["embed.weight"])[t * D + d];
    for (int l = 0; l < 2; ++l) {
      const auto& w1 = *w["layers." + std::to_string(l) + ".fc1.weight"];
      const auto& w2 = *w["layers." + std::to_string(l) + ".fc2.weight"];
      std::vector<double> h(F), y(D, 0.0);
      for (int64_t f = 0; f < F; ++f) {
        double a = 0;
        for (int64_t d = 0; d < D; ++d) a += x[d] * w1[f * D + d];
        h[f] = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0)));
      }
      for (int64_t d = 0; d < D; ++d)
        for (int64_t f = 0; f < F; ++f) y[d] += h[f] * w2[d * F + f];
      for (int64_t d = 0; d < D; ++d) x[d] += y[d];
    }
    for (int64_t v = 0; v < V; ++v) {
      double a = 0;
      for (int64_t d = 0; d < D; ++d) a += x[d] * (*w["head.weight"])[v * D + d];
      want.push_back(a);
    }
  }
  std::vector<ir::cpu::Tensor> tp;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<int64_t> shape;
    for (const auto& d : g.params[i].shape) shape.push_back(d.coeff);
    tp.push_back(ir::cpu::Tensor::from_f32(shape, params[i]));
  }
  ir::CpuExecutor ref(g, tp);
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<ir::cpu::Tensor> in = {ir::cpu::Tensor::from_i32({n}, tokens), ir::cpu::Tensor::from_i32({n}, {0, 1, 2})};
  const std::vector<float> got = ref.run(in).at(0).to_f32();
  std::vector<float> want_f(want.begin(), want.end());
  EXPECT_LT(rel_err(got, want_f), 1e-5);
  StagedProgram p = staged(g);
  EXPECT_EQ(launches_per_layer(p), 2) << explain(p);
  EXPECT_LT(staged_vs_reference(g, params, {{3, 17, 39}, {5}, {0}}), 1e-5);
}

// Refusals of real .lg programs, through the front end: the lifter names the statement.
std::string refusal_of(const std::string& file_name, const std::string& text, const nlohmann::json& config) {
  auto out = lang::check_source(file_name, text, config, lang::BindOptions{16});
  EXPECT_TRUE(out.ok) << out.rendered;
  try {
    lift(out.report.graph);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExampleModels, RankSevenViewIsRefusedAtItsStatement) {
  std::string text = read(kFile);
  const std::string norm = "h = layer_norm(x, l.ln_w, l.ln_b, eps)";
  text.replace(text.find(norm), norm.size(), norm + ".view(T, 1, 1, 2, 1, 1, D // 2).view(T, D)");
  std::string m = refusal_of("cc_mlp.lg", text, kConfig);
  EXPECT_NE(m.find("cc_mlp.lg:30:7: cannot lift `l0.h` (reshape): rank 7 exceeds the 6 axes"), std::string::npos) << m;
}

TEST(ExampleModels, AttentionOverAStaleCacheIsRefusedAtItsStatement) {
  std::string text = read(std::string(LG_SOURCE_DIR) + "/models/qwen3.lg");
  const std::string write = "      kcache[l, :, pos, :] = k.transpose(0, 1)";
  const std::string attn = "a = attention(q, kcache[l], vcache[l], pos)";
  ASSERT_NE(text.find(write), std::string::npos);
  size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find(write)), '\n')) + 1;
  text.insert(text.find(write), "      old = kcache[l]\n");
  text.replace(text.find(attn), attn.size(), "a = attention(q, old, vcache[l], pos)");
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3/config.json");
  std::string m = refusal_of("qwen3.lg", text, nlohmann::json::parse(f));
  // The write moved one line down; the attention statement is two lines after it.
  std::string at = "qwen3.lg:" + std::to_string(line + 3) + ":7: cannot lift `l0.a` (attention): it reads the state as it "
                   "was before the write at qwen3.lg:" + std::to_string(line + 1) + ":7";
  EXPECT_NE(m.find(at), std::string::npos) << m << "\nexpected: " << at;
}

}  // namespace
}  // namespace lg::lift::test
