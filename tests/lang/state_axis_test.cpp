// A state is paged along the axis its writes scatter on, one row per position of a sequence
// (docs/language.md, "Batched steps"): that axis must have size S, which `lg check` (and so every
// load) and the batching rewrite both enforce.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "ir/batch.h"
#include "lang/lower.h"
#include "lang_test_paths.h"
#include "support/error.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::kSource;
using lg::lang_test::load_json;
using lg::lang_test::tiny_qwen3_config;


std::string qwen3_text() {
  std::ifstream in(kSource + "/models/qwen3.lg");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A state's position axis (the one its writes scatter on) is paged by batched steps, one row per
// position: it must have size S. A copy of qwen3.lg with `kcache: f32[L, KV, 16, Dh]` passed
// `lg check` and failed at run time once a sequence passed 16 tokens ("input block_table (declared
// i32[B,1]) got [1,3]"); it is refused at the write, naming the state.
TEST(StateAxis, AStateWrittenAlongAnAxisOtherThanSIsRefusedAtTheWrite) {
  std::string text = qwen3_text();
  const auto config = tiny_qwen3_config();
  ASSERT_TRUE(lg::lang::check_source("qwen3.lg", text, config, {}).ok);
  for (const std::string state : {"kcache", "vcache"}) {
    const std::string decl = "state " + state + ": f32[L, KV, S, Dh]";
    const size_t at = text.find(decl);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, decl.size(), "state " + state + ": f32[L, KV, 16, Dh]");
  }
  const auto out = lg::lang::check_source("qwen3.lg", text, config, {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 2u) << out.rendered;  // one per state
  for (size_t k = 0; k < 2; ++k) {
    const std::string state = k == 0 ? "kcache" : "vcache";
    const auto& d = out.diagnostics[k];
    int write_line = 1;
    for (size_t c = 0; c < text.find(state + "[l, :, pos, :]"); ++c) write_line += text[c] == '\n';
    EXPECT_EQ(d.span.line, write_line) << out.rendered;
    EXPECT_EQ(d.message, "state " + state +
                             " is written along an axis of 16 positions; a state holds each sequence's positions along an "
                             "axis of size S = 1024 (the KV-cache capacity)")
        << out.rendered;
    ASSERT_EQ(d.notes.size(), 1u);
    EXPECT_EQ(d.notes[0].message, "state " + state + " f32[3, 2, 16, 32] is declared here");
    EXPECT_NE(out.rendered.find("qwen3.lg:" + std::to_string(write_line) + ":"), std::string::npos) << out.rendered;
  }
  // --max-seq 16 makes S 16: the same program then checks.
  EXPECT_TRUE(lg::lang::check_source("qwen3.lg", text, config, {.max_seq = 16}).ok);
}

// The rewrite refuses such a graph too (one not from the checker), naming the state and the write.
TEST(StateAxis, TheBatchingRewriteRefusesAStateAxisOtherThanS) {
  const auto out = lg::lang::check_source("qwen3.lg", qwen3_text(), tiny_qwen3_config(), {.max_seq = 64});
  ASSERT_TRUE(out.ok) << out.rendered;
  lg::ir::Graph g = out.report.graph;
  g.symbols.at(0).max = 32;  // T's bound, S, no longer the states' 64 rows
  try {
    lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8});
    ADD_FAILURE() << "batched";
  } catch (const lg::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("qwen3.lg:"), std::string::npos) << m;
    EXPECT_NE(m.find("state kcache is written along an axis of 64 positions, not S = 32"), std::string::npos) << m;
  }
  g.symbols.at(0).max = 64;
  EXPECT_NO_THROW(lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8}));
}

// At S = 1 (`lg run` of a one-token prompt with -n 1) a model with one KV head has a cache of
// [L, 1, 1, Dh], and kcache[l]'s view [1, 1, Dh] has two axes of size 1 where the position axis
// may be: the rewrite took the first, the KV axis, and refused the program ("read only whole ...
// by attention"), so `lg run --prompt-ids 5 -n 1` failed on tiny-qwen3-untied-mqa (found by a
// new-user pass). The pool now replaces attention's position axis, axis 1 of k and v.
TEST(StateAxis, OneKvHeadAtOnePositionIsPagedAlongThePositionAxis) {
  const auto config = load_json(kShared + "/fixtures/tiny-qwen3-untied-mqa/config.json");
  ASSERT_EQ(config.at("num_key_value_heads"), 1);
  const auto out = lg::lang::check_source("qwen3.lg", qwen3_text(), config, {.max_seq = 1});
  ASSERT_TRUE(out.ok) << out.rendered;
  lg::ir::Graph g = out.report.graph;
  ASSERT_NO_THROW(lg::ir::make_batched(g, {.block_size = 4, .num_blocks = 3}));
  const lg::ir::Dim pool = lg::ir::Dim::constant(12);
  for (const auto& state : g.states) EXPECT_EQ(state.shape.at(2), pool) << state.name;
  int attentions = 0;
  for (const lg::ir::Node& n : g.nodes) {
    if (n.op != lg::ir::Op::Attention) continue;
    ++attentions;
    for (size_t kv : {size_t{1}, size_t{2}}) {
      const lg::ir::Shape& shape = g.at(n.operands.at(kv)).shape;
      ASSERT_EQ(shape.size(), 3u);
      EXPECT_EQ(shape[0], lg::ir::Dim::constant(1));
      EXPECT_EQ(shape[1], pool);
    }
  }
  EXPECT_EQ(attentions, 3);  // one per layer
}

// Attention over this step's keys and values rather than the cache checks (a program of one
// sequence's prefill may mean it) but cannot be batched: in a step of several sequences their
// tokens would attend to one another's. The rewrite refused only attention that read a state
// some other way; this one ran under lg batch and answered a request with another's tokens
// mixed in. It is refused at the attention, and the type checker says what k and v are where
// the projection is passed as it comes, [T, KV, Dh].
TEST(StateAxis, AttentionOverThisStepsKeysIsRefusedByTheRewrite) {
  std::string text = qwen3_text();
  const std::string call = "attention(q, kcache[l], vcache[l], pos)";
  const size_t at = text.find(call);
  ASSERT_NE(at, std::string::npos);
  std::string direct = text;
  direct.replace(at, call.size(), "attention(q, k.transpose(0, 1), v.transpose(0, 1), pos)");
  const auto out = lg::lang::check_source("qwen3.lg", direct, tiny_qwen3_config(), {.max_seq = 64});
  ASSERT_TRUE(out.ok) << out.rendered;
  lg::ir::Graph g = out.report.graph;
  int line = 1;
  for (size_t c = 0; c < at; ++c) line += text[c] == '\n';
  try {
    lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8});
    ADD_FAILURE() << "batched";
  } catch (const lg::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("qwen3.lg:" + std::to_string(line) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find("its k and v must both be read from per-sequence states (the KV cache)"), std::string::npos) << m;
  }
  std::string as_projected = text;
  as_projected.replace(at, call.size(), "attention(q, k, v, pos)");
  const auto typed = lg::lang::check_source("qwen3.lg", as_projected, tiny_qwen3_config(), {.max_seq = 64});
  ASSERT_FALSE(typed.ok);
  EXPECT_NE(typed.rendered.find("attention's k and v must be [KV, S, Dh] with constant KV heads and head dim (a state "
                                "such as kcache[l], written with this step's keys), found tensor f32[T, 2, 32]"),
            std::string::npos)
      << typed.rendered;
}

}  // namespace

namespace {

// A state is written, and attention runs, at the tokens' positions: `pos` itself. A write at
// pos + 1 checked and failed mid-run ("position 40 is past the block table's 1 blocks"), or wrote
// into the rows of the sequence's next token; the rewrite refuses both at the statement.
TEST(StateAxis, WritesAndAttentionAtOtherThanPosAreRefusedByTheRewrite) {
  for (const auto& [from, to, says] : {
           std::tuple<std::string, std::string, std::string>{"kcache[l, :, pos, :]", "kcache[l, :, pos + 1, :]",
                                                             "a state is written at the tokens' positions, `pos` itself"},
           {"attention(q, kcache[l], vcache[l], pos)", "attention(q, kcache[l], vcache[l], pos - 1)",
            "attention runs at the tokens' positions, `pos` itself"}}) {
    std::string text = qwen3_text();
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    int line = 1;
    for (size_t c = 0; c < at; ++c) line += text[c] == '\n';
    const auto out = lg::lang::check_source("qwen3.lg", text, tiny_qwen3_config(), {.max_seq = 64});
    ASSERT_TRUE(out.ok) << out.rendered;
    lg::ir::Graph g = out.report.graph;
    try {
      lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8});
      ADD_FAILURE() << "batched: " << to;
    } catch (const lg::Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("qwen3.lg:" + std::to_string(line) + ":"), std::string::npos) << m;
      EXPECT_NE(m.find(says), std::string::npos) << m;
    }
  }
}

}  // namespace
