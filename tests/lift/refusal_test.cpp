// Refusals: programs the lifter cannot turn into stages stop the compile at the statement at
// fault (file:line:col) with the reason.
#include <gtest/gtest.h>

#include "builder.h"
#include "lift/lift.h"
#include "support/error.h"

namespace lg::lift::test {
namespace {

// Lifts g and returns the error message ("" if it lifted).
std::string refusal(const ir::Graph& g) {
  try {
    lift(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct SmallModel {
  Builder b;
  ValueId tokens, x;
  SmallModel() {
    tokens = b.input("tokens", {T()});
    x = b.gather(b.param("embed", {C(20), C(8)}), tokens, "x");
  }
};

TEST(Refusal, ReductionOverTokens) {
  SmallModel s;
  s.b.line = 7;
  s.b.output(s.b.reduce(Op::ReduceSum, s.x, 0, true, "total"));
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("test.lg:7:1: cannot lift `total`"), std::string::npos) << m;
  EXPECT_NE(m.find("reduces over the runtime dim T"), std::string::npos) << m;
}

TEST(Refusal, ContractionOverTokens) {
  SmallModel s;
  s.b.line = 9;
  ValueId xt = s.b.permute(s.x, {1, 0});
  s.b.output(s.b.matmul(xt, s.x, "gram"));  // [8, T] @ [T, 8]
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("test.lg:10:1: cannot lift `gram`"), std::string::npos) << m;
  EXPECT_NE(m.find("contracts over the runtime dim T"), std::string::npos) << m;
}

TEST(Refusal, SliceOfTokensWithConstantBounds) {
  SmallModel s;
  s.b.line = 4;
  ValueId last = s.b.slice(s.x, 0, 0, 1);
  s.b.output(s.b.unary(Op::Exp, last));
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("test.lg:4:1: cannot lift `slice` (slice)"), std::string::npos) << m;
  EXPECT_NE(m.find("slices the runtime dim T"), std::string::npos) << m;
}

TEST(Refusal, FloatMathOnIntegers) {
  SmallModel s;
  s.b.line = 12;
  s.b.output(s.b.unary(Op::Exp, s.tokens, "bad"));
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("test.lg:12:1: cannot lift `bad` (exp)"), std::string::npos) << m;
  EXPECT_NE(m.find("exp of a i32 value has no kernel form"), std::string::npos) << m;
}

TEST(Refusal, StateReadAfterItsOverwrite) {
  Builder b;
  ValueId pos = b.input("pos", {T()});
  ValueId st = b.state("cache", {C(1), C(8), C(4)});
  ValueId val = b.gather(b.param("table", {C(20), C(4)}), pos);  // [T, 4]
  b.line = 20;
  ValueId w = b.state_write(st, val, pos, {0}, 0);
  b.line = 21;
  ValueId stale = b.reshape(st, {C(8), C(4)});  // the version before the write
  b.output(b.unary(Op::Exp, stale, "stale"));
  b.output(b.unary(Op::Exp, b.reshape(w, {C(8), C(4)}), "fresh"));
  std::string m = refusal(b.g);
  EXPECT_NE(m.find("test.lg:22:1: cannot lift `stale` (exp)"), std::string::npos) << m;
  EXPECT_NE(m.find("before the write at test.lg:20:1"), std::string::npos) << m;
}

TEST(Refusal, RankAboveSix) {
  SmallModel s;
  s.b.line = 30;
  ValueId r = s.b.reshape(s.x, {T(), C(1), C(1), C(2), C(2), C(1), C(2)});
  s.b.output(s.b.unary(Op::Exp, r, "deep"));
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("test.lg:30:1: cannot lift"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 7 exceeds the 6 axes"), std::string::npos) << m;
}

TEST(Refusal, FloatGatherIndex) {
  SmallModel s;
  s.b.line = 40;
  ValueId fidx = s.b.cast(s.tokens, DType::F32);
  s.b.output(s.b.gather(s.b.param("t2", {C(5), C(3)}), fidx, "lookup"));
  std::string m = refusal(s.b.g);
  EXPECT_NE(m.find("cannot lift `lookup` (gather): gather index is f32"), std::string::npos) << m;
}

TEST(Refusal, HeadDimTooLargeForTheAttentionStage) {
  Builder b;
  ValueId pos = b.input("pos", {T()});
  ValueId q = b.reshape(b.gather(b.param("e", {C(10), C(512)}), pos), {T(), C(1), C(512)});
  ValueId k = b.reshape(b.state("k", {C(1), C(8), C(512)}), {C(1), C(8), C(512)});
  b.line = 50;
  b.output(b.attention(q, k, k, pos, 0.1, 1));
  std::string m = refusal(b.g);
  EXPECT_NE(m.find("test.lg:50:1: cannot lift `attn` (attention): head_dim 512 exceeds"), std::string::npos) << m;
}

}  // namespace
}  // namespace lg::lift::test
