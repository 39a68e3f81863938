// Lowering the shipped models (models/qwen3.lg, models/qwen2.lg) against the fixture configs and the
// 22M model's config: the params must be exactly the checkpoint's tensors with their shapes, the
// graph must pass the IR verifier, and its structure must follow the program (layers unrolled).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/verify.h"
#include "lang/lower.h"
#include "lang_test_paths.h"
#include "support/error.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::kSource;
using lg::lang_test::load_json;

/// Tensor names and shapes from a safetensors header (the checkpoint is the ground truth).
std::map<std::string, std::vector<int64_t>> checkpoint_shapes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  auto j = nlohmann::json::parse(header);
  std::map<std::string, std::vector<int64_t>> out;
  for (auto& [k, v] : j.items())
    if (k != "__metadata__") out[k] = v["shape"].get<std::vector<int64_t>>();
  return out;
}

struct Case {
  std::string lg;
  std::string dir;
};

void expect_matches_checkpoint(const Case& c) {
  SCOPED_TRACE(c.dir);
  auto config = load_json(c.dir + "/config.json");
  lg::ir::Graph g = lg::lang::lower_file(kSource + "/models/" + c.lg, config, {});
  EXPECT_NO_THROW(lg::ir::verify(g));
  auto ckpt = checkpoint_shapes(c.dir + "/model.safetensors");
  std::map<std::string, std::vector<int64_t>> bound;
  for (const auto& p : g.params) {
    std::vector<int64_t> shape;
    for (const auto& d : p.shape) {
      EXPECT_TRUE(d.is_const()) << p.name;
      shape.push_back(d.coeff);
    }
    EXPECT_TRUE(bound.emplace(p.tensor, shape).second) << "tensor bound twice: " << p.tensor;
  }
  EXPECT_EQ(bound, ckpt);  // every checkpoint tensor, and nothing else, with the same shape
}

TEST(Lower, Qwen3MatchesTinyQwen3Checkpoint) { expect_matches_checkpoint({"qwen3.lg", kShared + "/fixtures/tiny-qwen3"}); }
TEST(Lower, Qwen3MatchesUntiedMqaCheckpoint) {
  expect_matches_checkpoint({"qwen3.lg", kShared + "/fixtures/tiny-qwen3-untied-mqa"});
}
TEST(Lower, Qwen2MatchesTinyQwen2Checkpoint) { expect_matches_checkpoint({"qwen2.lg", kShared + "/fixtures/tiny-qwen2"}); }
TEST(Lower, Qwen3MatchesPycode22mCheckpoint) {
  expect_matches_checkpoint({"qwen3.lg", kShared + "/models/qwen3-pycode-22m"});
}

// Qwen3-MoE: the experts' tensors stacked into [E, ...] params, each expert's checkpoint tensor
// bound exactly once (the parts of a stacked param), and every checkpoint tensor bound.
TEST(Lower, Qwen3MoeStacksTheExpertsOfTinyQwen3Moe) {
  const std::string dir = kShared + "/fixtures/tiny-qwen3-moe";
  auto config = load_json(dir + "/config.json");
  lg::ir::Graph g = lg::lang::lower_file(kSource + "/models/qwen3_moe.lg", config, {});
  EXPECT_NO_THROW(lg::ir::verify(g));
  auto ckpt = checkpoint_shapes(dir + "/model.safetensors");
  std::map<std::string, std::vector<int64_t>> bound;
  for (const auto& p : g.params) {
    std::vector<int64_t> shape;
    for (const auto& d : p.shape) shape.push_back(d.coeff);
    if (p.parts.empty()) {
      EXPECT_TRUE(bound.emplace(p.tensor, shape).second) << p.tensor;
      continue;
    }
    ASSERT_EQ(static_cast<int64_t>(p.parts.size()), shape[0]) << p.name;
    EXPECT_NE(p.tensor.find("{e}"), std::string::npos) << p.tensor;
    for (const auto& part : p.parts)
      EXPECT_TRUE(bound.emplace(part, std::vector<int64_t>(shape.begin() + 1, shape.end())).second) << part;
  }
  EXPECT_EQ(bound, ckpt);
  // mlp_only_layers and decoder_sparse_step pick the dense layers (contains, `!= none`): layer 1
  // in the list, and with a step of 2 layers 0 and 2 too; a dense layer binds the dense MLP only.
  auto count = [](const lg::ir::Graph& gr, const std::string& prefix) {
    int n = 0;
    for (const auto& p : gr.params) n += p.name.rfind(prefix, 0) == 0;
    return n;
  };
  config["mlp_only_layers"] = {1};
  g = lg::lang::lower_file(kSource + "/models/qwen3_moe.lg", config, {});
  EXPECT_EQ(count(g, "l0.e") + count(g, "l2.e"), 6);
  EXPECT_EQ(count(g, "l1.e") + count(g, "l1.router"), 0);
  EXPECT_EQ(count(g, "l1.w") - count(g, "l1.wq") - count(g, "l1.wk") - count(g, "l1.wv") - count(g, "l1.wo"), 3);
  config["mlp_only_layers"] = nlohmann::json::array();
  config["decoder_sparse_step"] = 2;
  g = lg::lang::lower_file(kSource + "/models/qwen3_moe.lg", config, {});
  EXPECT_EQ(count(g, "l1.e"), 3);
  EXPECT_EQ(count(g, "l0.e") + count(g, "l2.e"), 0);
  // Two expert counts that differ are refused naming both fields (it was a tensor-shape error).
  {
    auto two = config;
    two["num_experts"] = 3;
    two["num_local_experts"] = 4;
    try {
      lg::lang::lower_file(kSource + "/models/qwen3_moe.lg", two, {});
      ADD_FAILURE() << "num_experts 3 and num_local_experts 4 accepted";
    } catch (const lg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("num_experts and num_local_experts differ"), std::string::npos) << e.what();
    }
  }
  // A step of 0 is refused naming the field, as the one error (it was "division by zero" at each
  // layer's params; a failed require now ends the binding).
  config["decoder_sparse_step"] = 0;
  try {
    lg::lang::lower_file(kSource + "/models/qwen3_moe.lg", config, {});
    ADD_FAILURE() << "decoder_sparse_step 0 accepted";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder_sparse_step must be at least 1"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(Lower, Pycode22mGraphStructure) {
  auto config = load_json(kShared + "/models/qwen3-pycode-22m/config.json");
  lg::ir::Graph g = lg::lang::lower_file(kSource + "/models/qwen3.lg", config, {});
  ASSERT_EQ(g.symbols.size(), 1u);
  EXPECT_EQ(g.symbols[0].name, "T");
  EXPECT_EQ(g.symbols[0].max, 4096);
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].name, "tokens");
  EXPECT_EQ(g.inputs[1].name, "pos");
  ASSERT_EQ(g.outputs.size(), 1u);
  const auto& logits = g.at(g.outputs[0]);
  EXPECT_EQ(logits.dtype, lg::DType::F32);
  EXPECT_EQ(logits.shape, (lg::ir::Shape{lg::ir::Dim::symbol(0), lg::ir::Dim::constant(151936)}));
  ASSERT_EQ(g.final_states.size(), 2u);
  std::map<lg::ir::Op, int> count;
  for (const auto& n : g.nodes) ++count[n.op];
  // Per layer: q, k, v, o, gate, up, down projections; plus the lm_head.
  EXPECT_EQ(count[lg::ir::Op::MatMul], 8 * 7 + 1);
  EXPECT_EQ(count[lg::ir::Op::Attention], 8);
  EXPECT_EQ(count[lg::ir::Op::StateWrite], 16);
  EXPECT_EQ(count[lg::ir::Op::Gather], 1);
  // RMSNorm: input, post-attention, q and k per layer, and the final norm.
  EXPECT_EQ(count[lg::ir::Op::Rsqrt], 8 * 4 + 1);
  EXPECT_EQ(count[lg::ir::Op::Param], 90);  // the tied head reuses the embedding param
  // Attention: scale 1/sqrt(128), 4 query heads over 2 KV heads.
  for (const auto& n : g.nodes) {
    if (n.op != lg::ir::Op::Attention) continue;
    EXPECT_DOUBLE_EQ(n.attrs.scale, 1.0 / std::sqrt(128.0));
    EXPECT_EQ(n.attrs.gqa_group, 2);
  }
  // Every node keeps the statement it came from and a layer-prefixed name.
  bool saw_l3q = false;
  for (const auto& n : g.nodes) {
    EXPECT_GT(n.span.line, 0) << n.name;
    saw_l3q = saw_l3q || n.name == "l3.q";
  }
  EXPECT_TRUE(saw_l3q);
}

TEST(Lower, MaxSeqOverridesContext) {
  auto config = load_json(kShared + "/fixtures/tiny-qwen3/config.json");
  lg::ir::Graph g = lg::lang::lower_file(kSource + "/models/qwen3.lg", config, {.max_seq = 64});
  EXPECT_EQ(g.symbols[0].max, 64);
  EXPECT_EQ(g.states[0].shape[2], lg::ir::Dim::constant(64));
}

TEST(Lower, RopeThetaAtTopLevelOrInRopeParameters) {
  auto config = load_json(kShared + "/fixtures/tiny-qwen3/config.json");
  auto report = lg::lang::check_file(kSource + "/models/qwen3.lg", config, {});
  auto theta = [](const lg::lang::CheckReport& r) {
    for (const auto& c : r.consts)
      if (c.name == "theta") return c.value;
    return std::string("?");
  };
  EXPECT_EQ(theta(report), "10000");
  config.erase("rope_parameters");
  config["rope_theta"] = 500000.0;
  EXPECT_EQ(theta(lg::lang::check_file(kSource + "/models/qwen3.lg", config, {})), "500000");
}

TEST(Lower, MissingFileIsAnError) {
  EXPECT_THROW(lg::lang::lower_file("/nonexistent.lg", nlohmann::json::object(), {}), lg::Error);
}

}  // namespace

namespace {

// Line ends: LF, CRLF and a CR alone (classic Mac) read the same program, and a diagnostic names
// the same line in each. A CR-only file was one line, the first comment swallowing the rest:
// "expected a `model` block, found none".
TEST(Lower, EveryLineEndReadsTheSameProgram) {
  std::ifstream in(kSource + "/models/qwen3.lg");
  const std::string lf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto with_ends = [&](const std::string& text, const std::string& end) {
    std::string out;
    for (const char c : text) out += c == '\n' ? end : std::string(1, c);
    return out;
  };
  const auto config = lg::lang_test::tiny_qwen3_config();
  const auto want = lg::lang::check_source("qwen3.lg", lf, config, {.max_seq = 64});
  ASSERT_TRUE(want.ok) << want.rendered;
  for (const std::string end : {"\r\n", "\r"}) {
    SCOPED_TRACE(end == "\r" ? "CR" : "CRLF");
    const auto got = lg::lang::check_source("qwen3.lg", with_ends(lf, end), config, {.max_seq = 64});
    ASSERT_TRUE(got.ok) << got.rendered;
    EXPECT_EQ(got.report.graph.nodes.size(), want.report.graph.nodes.size());
    // A typo on the line of the first layer norm is reported at that line.
    std::string typo = lf;
    const size_t at = typo.find("rms_norm(x, l.ln1, eps)");
    ASSERT_NE(at, std::string::npos);
    typo.replace(at, 8, "rms_nrom");
    const int line = 1 + static_cast<int>(std::count(lf.begin(), lf.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const auto bad = lg::lang::check_source("qwen3.lg", with_ends(typo, end), config, {.max_seq = 64});
    ASSERT_FALSE(bad.ok);
    EXPECT_NE(bad.rendered.find("qwen3.lg:" + std::to_string(line) + ":"), std::string::npos) << bad.rendered;
  }
}

}  // namespace
