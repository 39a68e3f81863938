// Kernel-count tests (as tinygrad's "this schedules to N kernels"): each fusion pass, on the
// smallest graph that needs it, and what the count is with that pass switched off. Each test also
// checks that the fused program computes what the CPU reference computes.
#include <gtest/gtest.h>

#include "lift/explain.h"
#include "lift/stage_graph.h"
#include "tiny_models.h"

namespace lg::lift::test {
namespace {

size_t stages_of(const ir::Graph& g, const FuseOptions& opts = {}) {
  StagedProgram p = lift(g);
  fuse(p, opts);
  return p.stages.size();
}

// x = embed[tokens] as the float input of the small graphs.
struct Small {
  Builder b;
  ValueId tokens, x;
  explicit Small(int64_t D = 24, int64_t V = 20) {
    tokens = b.input("tokens", {T()});
    b.input("pos", {T()});
    x = b.gather(b.param("embed", {C(V), C(D)}), tokens, "x");
  }
};

const std::vector<std::vector<int32_t>> kSteps = {{3, 1, 4, 1, 5}, {9}, {2}};

TEST(Fusion, UnfusedLiftIsOneStagePerComputeNode) {
  Small s;
  s.b.output(s.b.unary(Op::Exp, s.b.binary(Op::Add, s.b.unary(Op::Neg, s.x), s.b.constant(1.0, 2))));
  StagedProgram p = lift(s.b.g);
  EXPECT_EQ(p.stages.size(), 4u);  // gather, neg, add, exp (the constant is inline)
}

TEST(Fusion, ReaderSetsFollowAStageOfSeveralNodesDissolvedSince) {
  // neg -> {add, mul} (two maps merged into one stage by hand) -> exp. pass_inline_elementwise
  // keeps one NodeIndex for a sweep while it dissolves stages: after {add, mul} is dissolved,
  // neg's readers are found through add, whose remembered readers name mul, a stage node when
  // they were asked; the answer must follow mul to exp.
  Small s;
  const ValueId a = s.b.unary(Op::Neg, s.x);
  const ValueId m1 = s.b.binary(Op::Add, a, s.b.constant(1.0, 2));
  const ValueId m2 = s.b.binary(Op::Mul, m1, m1);
  const ValueId e = s.b.unary(Op::Exp, m2);
  s.b.output(e);
  StagedProgram p = lift(s.b.g);
  ASSERT_EQ(p.stages.size(), 5u);  // gather, neg, add, mul, exp
  merge_stages(p, p.stage_of[static_cast<size_t>(m1)], p.stage_of[static_cast<size_t>(m2)]);
  normalize(p);
  ASSERT_EQ(p.stages.size(), 4u);
  const int32_t both = p.stage_of[static_cast<size_t>(m1)], exp_stage = p.stage_of[static_cast<size_t>(e)];
  NodeIndex index(p);
  StageGraph g(p, &index);
  EXPECT_EQ(g.readers(m1), std::vector<int32_t>{both});
  EXPECT_EQ(g.readers_of_stage(both), std::vector<int32_t>{exp_stage});
  for (ValueId v : p.stages[static_cast<size_t>(both)].nodes) {  // dissolve it, as the sweep does
    p.is_inline[static_cast<size_t>(v)] = true;
    p.stage_of[static_cast<size_t>(v)] = -1;
  }
  p.stages[static_cast<size_t>(both)].nodes.clear();
  EXPECT_EQ(g.readers(a), std::vector<int32_t>{exp_stage});
  EXPECT_EQ(g.readers(m1), std::vector<int32_t>{exp_stage});
  normalize(p);
  pass_inline_elementwise(p);
  EXPECT_EQ(p.stages.size(), 2u) << explain(p);  // gather | neg, add, mul recomputed in exp's stage
}

TEST(Fusion, IdenticalNodesAreOneValue) {
  // Two exp(x) nodes (as two calls of one .lg function make): lifted as one stage, one value.
  Small s;
  ValueId e1 = s.b.unary(Op::Exp, s.x), e2 = s.b.unary(Op::Exp, s.x);
  ASSERT_NE(e1, e2);
  s.b.output(s.b.binary(Op::Mul, e1, e2));
  StagedProgram p = lift(s.b.g);
  EXPECT_EQ(p.stages.size(), 3u) << explain(p);  // gather, exp, mul
  EXPECT_EQ(p.graph.at(p.stages.back().nodes[0]).operands[0], p.graph.at(p.stages.back().nodes[0]).operands[1]);
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 24), kSteps), 1e-6);
}

TEST(Fusion, RopeTablesAreComputedOnceInTheFirstLaunch) {
  // q and k of two layers each call rope: cos and sin of pos are one value each, computed once
  // (not per element of every reader) in the first launch, beside the embedding lookup.
  Small s;
  ValueId pos = 1;  // Small's second input
  ASSERT_EQ(s.b.g.at(pos).op, Op::Input);
  ValueId x = s.x;
  for (int l = 0; l < 2; ++l) {
    ValueId q = s.b.reshape(s.b.matmul(x, s.b.transpose(s.b.param("wq" + std::to_string(l), {C(24), C(24)}))),
                            {T(), C(3), C(8)});
    ValueId k = s.b.reshape(s.b.matmul(x, s.b.transpose(s.b.param("wk" + std::to_string(l), {C(24), C(24)}))),
                            {T(), C(3), C(8)});
    ValueId qk = s.b.binary(Op::Mul, s.b.rope(q, pos, 10000.0), s.b.rope(k, pos, 10000.0));
    x = s.b.binary(Op::Add, x, s.b.reshape(qk, {T(), C(24)}));
  }
  s.b.output(x);
  StagedProgram p = lift(s.b.g);
  fuse(p);
  int cos_stages = 0, sin_stages = 0;
  for (const Stage& st : p.stages)
    for (ValueId v : st.nodes) {
      cos_stages += p.graph.at(v).op == Op::Cos;
      sin_stages += p.graph.at(v).op == Op::Sin;
    }
  EXPECT_EQ(cos_stages, 1) << explain(p);
  EXPECT_EQ(sin_stages, 1) << explain(p);
  ASSERT_FALSE(p.launches.empty());
  int in_first = 0;
  for (int32_t st : p.launches[0].stages)
    for (ValueId v : p.stages[static_cast<size_t>(st)].nodes)
      in_first += p.graph.at(v).op == Op::Cos || p.graph.at(v).op == Op::Sin;
  EXPECT_EQ(in_first, 2) << explain(p);
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 25), kSteps), 1e-6);
}

TEST(Fusion, ElementwiseChainAfterGatherIsOneStage) {
  Small s;
  s.b.output(s.b.unary(Op::Exp, s.b.binary(Op::Add, s.b.unary(Op::Neg, s.x), s.b.constant(1.0, 2))));
  EXPECT_EQ(stages_of(s.b.g), 1u);
  FuseOptions no_gather;
  no_gather.gather_epilogue = false;
  EXPECT_EQ(stages_of(s.b.g, no_gather), 2u);  // gather | one map for the whole chain
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 1), kSteps), 1e-6);
}

TEST(Fusion, RmsNormIsOneStage) {
  Small s;
  s.b.output(s.b.rms_norm(s.x, s.b.param("w", {C(24)}), 1e-6));
  EXPECT_EQ(stages_of(s.b.g), 2u);  // gather | rms_norm
  FuseOptions off;
  off.reduce_epilogue = false;
  EXPECT_EQ(stages_of(s.b.g, off), 3u);  // gather | sum(x*x) | x * rsqrt(..) * w
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 2), kSteps), 1e-6);
}

TEST(Fusion, RmsNormBeforeAGemmIsItsPrologue) {
  Small s;
  ValueId h = s.b.rms_norm(s.x, s.b.param("w", {C(24)}), 1e-6);
  s.b.output(s.b.matmul(h, s.b.transpose(s.b.param("wq", {C(16), C(24)}))));
  StagedProgram p = lift(s.b.g);
  fuse(p);
  ASSERT_EQ(p.stages.size(), 2u) << explain(p);  // gather | rms_norm + gemm
  EXPECT_EQ(p.stages[1].kind, StageKind::Gemm);
  ASSERT_EQ(p.stages[1].stores.size(), 1u);
  EXPECT_EQ(p.graph.at(p.stages[1].stores[0]).op, Op::MatMul);  // the normalised row never leaves
  FuseOptions off;
  off.gemm_reduce_prologue = false;
  EXPECT_EQ(stages_of(s.b.g, off), 3u);  // gather | rms_norm | gemm
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 21), kSteps), 1e-6);
}

TEST(Fusion, NormReadByAGemmEpilogueStaysItsOwnStage) {
  // h is also the residual of the GEMM's output: the epilogue needs h at (t, n), which a
  // prologue that normalises the activation row (t, k) does not give it.
  Small s;
  ValueId h = s.b.rms_norm(s.x, s.b.param("w", {C(24)}), 1e-6);
  s.b.output(s.b.binary(Op::Add, h, s.b.matmul(h, s.b.transpose(s.b.param("wo", {C(24), C(24)})))));
  EXPECT_EQ(stages_of(s.b.g), 3u);  // gather | rms_norm | gemm + residual
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 22), kSteps), 1e-6);
}

TEST(Fusion, NormOverAnotherAxisIsNoGemmPrologue) {
  // The reduction runs over the rows' other axis (tokens do not mix, so over a [T, 4, 6] view's
  // middle axis): the GEMM's activation row does not hold a whole reduced row.
  Small s;
  ValueId v = s.b.reshape(s.x, {T(), C(4), C(6)});
  ValueId sum = s.b.reduce(Op::ReduceSum, s.b.binary(Op::Mul, v, v), 1, true);
  ValueId n = s.b.reshape(s.b.binary(Op::Div, v, s.b.binary(Op::Add, sum, s.b.constant(1.0, 3))), {T(), C(24)});
  s.b.output(s.b.matmul(n, s.b.transpose(s.b.param("wq", {C(16), C(24)}))));
  StagedProgram p = lift(s.b.g);
  fuse(p);
  EXPECT_EQ(p.stages.size(), 3u) << explain(p);  // gather | reduce | gemm
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 23), kSteps), 1e-6);
}

TEST(Fusion, SoftmaxIsOneStage) {
  Small s;
  ValueId mx = s.b.reduce(Op::ReduceMax, s.x, -1, true);
  ValueId e = s.b.unary(Op::Exp, s.b.binary(Op::Sub, s.x, mx));
  s.b.output(s.b.binary(Op::Div, e, s.b.reduce(Op::ReduceSum, e, -1, true)));
  EXPECT_EQ(stages_of(s.b.g), 2u);  // gather | max, exp-sum, divide
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 3), kSteps), 1e-6);
}

TEST(Fusion, GemmWithBiasAndResidualIsOneStage) {
  Small s;
  ValueId y = s.b.matmul(s.x, s.b.transpose(s.b.param("w", {C(24), C(24)})));
  y = s.b.binary(Op::Add, y, s.b.reshape(s.b.param("bias", {C(24)}), {C(1), C(24)}));
  s.b.output(s.b.binary(Op::Add, s.x, y));
  EXPECT_EQ(stages_of(s.b.g), 2u);  // gather | gemm + bias + residual
  FuseOptions off;
  off.gemm_epilogue = false;
  EXPECT_EQ(stages_of(s.b.g, off), 3u);
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 4), kSteps), 1e-6);
}

TEST(Fusion, SwiGluMergesGateUpAndFusesTheProduct) {
  Small s;
  ValueId g = s.b.matmul(s.x, s.b.transpose(s.b.param("wg", {C(40), C(24)})));
  ValueId u = s.b.matmul(s.x, s.b.transpose(s.b.param("wu", {C(40), C(24)})));
  ValueId m = s.b.binary(Op::Mul, s.b.silu(g), u);
  s.b.output(s.b.matmul(m, s.b.transpose(s.b.param("wd", {C(24), C(40)}))));
  StagedProgram p = lift(s.b.g);
  fuse(p);
  ASSERT_EQ(p.stages.size(), 3u);  // gather | gate/up + silu(g)*u | down
  EXPECT_EQ(p.stages[1].kind, StageKind::Gemm);
  ASSERT_EQ(p.stages[1].stores.size(), 1u);
  EXPECT_EQ(p.graph.at(p.stages[1].stores[0]).op, Op::Mul);  // only the product leaves the stage
  FuseOptions off;
  off.merge_gemm_siblings = false;
  EXPECT_EQ(stages_of(s.b.g, off), 4u);
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 5), kSteps), 1e-6);
}

TEST(Fusion, QkvGemmsMergeIntoOne) {
  Small s;
  for (const char* n : {"wq", "wk", "wv"})
    s.b.output(s.b.matmul(s.x, s.b.transpose(s.b.param(n, {C(16), C(24)}))));
  EXPECT_EQ(stages_of(s.b.g), 2u);
  FuseOptions off;
  off.merge_gemm_siblings = false;
  EXPECT_EQ(stages_of(s.b.g, off), 4u);
}

TEST(Fusion, RopeIsFusedWithTheKvCacheWrite) {
  Small s(32);
  ValueId pos = 1;  // the "pos" input
  ValueId kc = s.b.state("kcache", {C(1), C(2), C(16), C(16)});
  ValueId k = s.b.reshape(s.b.matmul(s.x, s.b.transpose(s.b.param("wk", {C(32), C(32)}))), {T(), C(2), C(16)});
  k = s.b.rope(k, pos, 10000.0);
  ValueId w = s.b.state_write(kc, s.b.permute(k, {1, 0, 2}), pos, {0}, 1);
  s.b.output(s.b.reduce(Op::ReduceSum, s.b.reshape(s.b.slice(w, 2, 0, 4), {C(2), C(4), C(16)}), 2, false));
  StagedProgram p = lift(s.b.g);
  fuse(p);
  // gather | k gemm | rope + cache write | the read-back of the cache
  ASSERT_EQ(p.stages.size(), 4u);
  EXPECT_EQ(p.stages[2].kind, StageKind::StateWrite);
  EXPECT_EQ(p.stages[2].nodes.size(), 1u);  // RoPE is inline in the write
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 6), kSteps), 1e-6);
}

TEST(Fusion, AWriteIsNotFusedIntoAStageReadingTheRowsItOverwrites) {
  // r = e @ cache (every row of the old cache), then r is written into the cache at pos: as one
  // kernel, the threads writing rows pos would race the threads still reading them. The CPU
  // executor computes before it writes, so only the pass's guard can keep the two apart.
  Small s(16);
  ValueId pos = 1;
  ValueId cache = s.b.state("cache", {C(8), C(16)});
  ValueId e = s.b.gather(s.b.param("emb8", {C(20), C(8)}), 0);  // [T, 8]
  ValueId r = s.b.matmul(e, cache);                              // [T, 16]
  ValueId w = s.b.state_write(cache, r, pos, {}, 0);
  s.b.output(s.b.binary(Op::Add, r, s.b.reshape(s.b.reduce(Op::ReduceSum, w, 0, false), {C(1), C(16)})));
  StagedProgram p = lift(s.b.g);
  fuse(p);
  for (const Stage& st : p.stages) {
    bool writes = false, multiplies = false;
    for (ValueId v : st.nodes) {
      writes = writes || p.graph.at(v).op == Op::StateWrite;
      multiplies = multiplies || p.graph.at(v).op == Op::MatMul;
    }
    EXPECT_FALSE(writes && multiplies) << explain(p);
  }
  std::vector<std::vector<int32_t>> steps = {{3, 1, 4}, {9}, {2}};  // positions 0..4 of 8 rows
  EXPECT_LT(staged_vs_reference(s.b.g, random_params(s.b.g, 26), steps), 1e-6);
}

TEST(Fusion, QkNormRopeAndCacheWriteAreOneStage) {
  QwenShape c;
  ir::Graph g = qwen_like(c);
  StagedProgram p = lift(g);
  fuse(p);
  // k's stage: its rms_norm reduction and the cache write together.
  bool found = false;
  for (const auto& st : p.stages) {
    bool has_write = false, has_reduce = false;
    for (ValueId v : st.nodes) {
      const auto& n = p.graph.at(v);
      if (n.op == Op::StateWrite && n.attrs.fixed == std::vector<int64_t>{0} && n.operands[0] == 3) has_write = true;
      if (n.op == Op::ReduceSum) has_reduce = true;
    }
    if (has_write && has_reduce) found = true;
  }
  EXPECT_TRUE(found) << explain(p);
}

TEST(Fusion, QwenLikeDecodeLayerTakesAtMostEightLaunches) {
  for (bool qk : {true, false}) {
    QwenShape c;
    c.L = 3;
    c.qk_norm = qk;
    c.qkv_bias = !qk;
    StagedProgram p = lift(qwen_like(c));
    fuse(p);
    EXPECT_LE(launches_per_layer(p), 8) << explain(p);
    StagedProgram unfused = lift(qwen_like(c));
    EXPECT_GT(launches_per_layer(unfused), 30);
  }
}

TEST(Fusion, QwenLikeStagedEqualsReferenceOverPrefillAndDecode) {
  for (bool qk : {true, false}) {
    QwenShape c;
    c.qk_norm = qk;
    c.qkv_bias = !qk;
    ir::Graph g = qwen_like(c);
    auto params = random_params(g, 7);
    std::vector<std::vector<int32_t>> steps = {{1, 5, 9, 2, 30, 7}, {11}, {3}, {39}};
    EXPECT_LT(staged_vs_reference(g, params, steps), 1e-5) << "fused, qk_norm " << qk;
    FuseOptions none{false, false, false, false, false, false, false, false, false};
    EXPECT_LT(staged_vs_reference(g, params, steps, none), 1e-5) << "unfused, qk_norm " << qk;
  }
}

}  // namespace
}  // namespace lg::lift::test
