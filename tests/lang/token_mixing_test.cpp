// A token may read the other tokens of its sequence only through the KV cache (attention): every
// lane runs steps of many sequences and prefills prompts in chunks, so a statement that mixes the
// tokens of a step (a reduction, contraction or gather along T, or a [T, T] value; the type
// checker refuses slicing T with constants itself) would answer differently with the batch. The
// batching rewrite refuses it, naming the statement; the cpu lane ran such programs and gave
// three answers at three --max-step-tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "ir/batch.h"
#include "lang/lower.h"
#include "lang_test_paths.h"
#include "support/error.h"

namespace {

using lg::lang_test::kSource;
using lg::lang_test::tiny_qwen3_config;

struct Mixing {
  const char* statement;  // replaces `rms_norm(x, l.ln1, eps)` in qwen3.lg's first layer norm
  const char* says;
};

const Mixing kMixing[] = {
    {"rms_norm(x + (x.T @ x)[0:1, :], l.ln1, eps)", "it contracts over the token axis"},
    {"rms_norm(softmax(x, axis=0), l.ln1, eps)", "it reduces over the token axis"},
    {"rms_norm(x - max(x, axis=0, keepdim=true), l.ln1, eps)", "it reduces over the token axis"},
    {"rms_norm(x + sum(x, axis=-2, keepdim=true), l.ln1, eps)", "it reduces over the token axis"},
    {"rms_norm(x + x[pos * 0], l.ln1, eps)", "it gathers rows of the token axis by index"},
    {"rms_norm(x + (x @ x.T) @ x, l.ln1, eps)", "its shape holds the token axis twice"},
};

class TokenMixing : public ::testing::TestWithParam<Mixing> {};

TEST_P(TokenMixing, IsRefusedByTheBatchingRewriteAtItsStatement) {
  std::ifstream in(kSource + "/models/qwen3.lg");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string norm = "rms_norm(x, l.ln1, eps)";
  const size_t at = text.find(norm);
  ASSERT_NE(at, std::string::npos);
  int line = 1;
  for (size_t c = 0; c < at; ++c) line += text[c] == '\n';
  {
    // The program as written batches: the control.
    const auto out = lg::lang::check_source("qwen3.lg", text, tiny_qwen3_config(), {.max_seq = 64});
    ASSERT_TRUE(out.ok) << out.rendered;
    lg::ir::Graph g = out.report.graph;
    EXPECT_NO_THROW(lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8}));
  }
  text.replace(at, norm.size(), GetParam().statement);
  const auto out = lg::lang::check_source("qwen3.lg", text, tiny_qwen3_config(), {.max_seq = 64});
  ASSERT_TRUE(out.ok) << "the type checker allows it (one sequence alone is well typed): " << out.rendered;
  lg::ir::Graph g = out.report.graph;
  try {
    lg::ir::make_batched(g, {.block_size = 16, .num_blocks = 8});
    ADD_FAILURE() << "batched: " << GetParam().statement;
  } catch (const lg::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("qwen3.lg:" + std::to_string(line) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find(GetParam().says), std::string::npos) << m;
    EXPECT_NE(m.find("the KV cache, through attention, is how a token reads the others"), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Statements, TokenMixing, ::testing::ValuesIn(kMixing));

}  // namespace
