// The non-Qwen example programs in models/examples/ check against configs of their families and
// lower to graphs the IR verifier accepts.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "ir/verify.h"
#include "lang/lower.h"
#include "support/error.h"

namespace {

// A real GPT-2 config has n_positions, not max_position_embeddings: gpt2.lg declares S from it,
// so it checks with no max sequence length given (it used to fail asking for
// max_position_embeddings); a given one still wins.
TEST(Examples, Gpt2TakesItsContextFromNPositions) {
  const auto config =
      nlohmann::json::parse(R"({"vocab_size":50257,"n_embd":768,"n_head":12,"n_layer":12,"n_positions":1024})");
  const std::string file = std::string(LG_SOURCE_DIR) + "/models/gpt2.lg";
  auto dim = [](const lg::lang::CheckReport& r, const std::string& name) {
    for (const auto& d : r.dims)
      if (d.name == name) return d.value;
    return std::string("(none)");
  };
  const auto report = lg::lang::check_file(file, config, {});
  EXPECT_EQ(dim(report, "S"), "1024");
  ASSERT_FALSE(report.symbols.empty());
  EXPECT_EQ(report.symbols[0], "T <= 1024");
  EXPECT_EQ(dim(lg::lang::check_file(file, config, {.max_seq = 64}), "S"), "64");
  // A program without its own S, on a config without max_position_embeddings, says how to give one.
  try {
    lg::lang::check_file(std::string(LG_SOURCE_DIR) + "/models/qwen3.lg", config, {});
    FAIL() << "qwen3.lg checked against a GPT-2 config";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no max sequence length was given (give one with --max-seq, or declare `S = "
                                         "...` in the dims block)"),
              std::string::npos)
        << e.what();
  }
}

// The config reader takes an integer written as a float (4096.0, as some exporters write it); the
// binder refused it as max_position_embeddings "missing or not an integer" (found by a new-user
// pass). A float that is not an integer still is refused.
TEST(Examples, ContextWrittenAsAnIntegralFloatIsTheContext) {
  auto config = nlohmann::json::parse(R"({"vocab_size": 300, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true,
    "max_position_embeddings": 4096.0})");
  const std::string file = std::string(LG_SOURCE_DIR) + "/models/qwen3.lg";
  const auto report = lg::lang::check_file(file, config, {});
  std::string s;
  for (const auto& d : report.dims)
    if (d.name == "S") s = d.value;
  EXPECT_EQ(s, "4096");
  config["max_position_embeddings"] = 4096.5;
  EXPECT_THROW(lg::lang::check_file(file, config, {}), lg::Error);
}

TEST(Examples, Gpt2ChecksAndLowers) {
  // A small GPT-2 config in the Hugging Face layout (field names as GPT2Config spells them).
  auto config = nlohmann::json::parse(R"({"model_type": "gpt2", "vocab_size": 300, "n_embd": 48, "n_head": 3,
    "n_layer": 2, "n_positions": 128, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
    "torch_dtype": "float32"})");
  auto report = lg::lang::check_file(std::string(LG_SOURCE_DIR) + "/models/gpt2.lg", config, {.max_seq = 128});
  const lg::ir::Graph& g = report.graph;
  EXPECT_NO_THROW(lg::ir::verify(g));
  EXPECT_EQ(g.params.size(), 4u + 2 * 12);
  std::map<std::string, lg::ir::Shape> shapes;
  for (const auto& p : g.params) shapes[p.tensor] = p.shape;
  using lg::ir::Dim;
  // Conv1D weights are stored [in, out]: the params are their transposes, loaded transposed.
  EXPECT_EQ(shapes["transformer.h.1.attn.c_attn.weight"], (lg::ir::Shape{Dim::constant(144), Dim::constant(48)}));
  EXPECT_EQ(shapes["transformer.h.0.mlp.c_fc.weight"], (lg::ir::Shape{Dim::constant(192), Dim::constant(48)}));
  for (const auto& p : g.params) EXPECT_EQ(p.transposed, p.tensor.find("c_") != std::string::npos && p.shape.size() == 2) << p.tensor;
  std::map<lg::ir::Op, int> count;
  for (const auto& n : g.nodes) ++count[n.op];
  EXPECT_EQ(count[lg::ir::Op::Attention], 2);
  EXPECT_EQ(count[lg::ir::Op::Gather], 2);  // token and position embeddings
  EXPECT_EQ(count[lg::ir::Op::Tanh], 2);    // GELU, not SiLU
  EXPECT_EQ(count[lg::ir::Op::Sigmoid], 0);
  for (const auto& n : g.nodes) {
    if (n.op == lg::ir::Op::Attention) {
      EXPECT_EQ(n.attrs.gqa_group, 1);
    }
  }
}

TEST(Examples, Gpt2RefusesOtherActivations) {
  auto config = nlohmann::json::parse(R"({"vocab_size": 300, "n_embd": 48, "n_head": 3, "n_layer": 2,
    "n_positions": 128, "activation_function": "relu"})");
  try {
    lg::lang::check_file(std::string(LG_SOURCE_DIR) + "/models/gpt2.lg", config, {.max_seq = 64});
    ADD_FAILURE() << "relu accepted";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("error: requirement failed: gpt2.lg implements gelu_new only"), std::string::npos)
        << e.what();
  }
}

}  // namespace
