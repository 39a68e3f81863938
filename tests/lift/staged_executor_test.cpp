// The staged executor's value semantics against the CPU reference executor's, on inputs where a
// plain C++ rule would differ: a float stored as i32 (NaN, infinities, values past the i32 range).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tiny_models.h"

namespace lg::lift::test {
namespace {

// ir/cpu_ops.cpp stores a float into i32 toward zero, NaN as 0, saturating at the range's ends
// (CUDA's conversion). The staged executor truncated in double and stored the result as it was:
// NaN, +-inf and 3e9 came out of an "i32" value, where the reference holds 0, INT32_MAX/MIN.
TEST(StagedExecutor, CastToI32SaturatesAndNanIsZeroAsTheReference) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> table = {nan, inf, -inf, 3e9f, -3e9f, 2147483648.0f, -2147483648.0f, -1.7f, 2.9f, 1e10f};
  const auto V = static_cast<int64_t>(table.size());
  Builder b;
  ValueId tokens = b.input("tokens", {T()});
  b.input("pos", {T()});
  ValueId x = b.gather(b.param("table", {C(V), C(1)}), tokens, "x");
  b.output(b.cast(b.cast(x, DType::I32), DType::F32));  // the i32 value, read back as a float
  // Arithmetic whose float result becomes i32 converts the same way (1e10 * 1e10 is inf in f32).
  b.output(b.cast(b.cast(b.binary(Op::Mul, x, x), DType::I32), DType::F32));
  const ir::Graph& g = b.g;

  std::vector<int32_t> toks(static_cast<size_t>(V)), pos(static_cast<size_t>(V));
  for (int32_t i = 0; i < V; ++i) toks[static_cast<size_t>(i)] = pos[static_cast<size_t>(i)] = i;
  const float max = 2147483647.0f, min = -2147483648.0f;  // INT32_MAX as a float is 2^31
  const std::vector<float> want_cast = {0, max, min, max, min, max, min, -1, 2, max};
  const std::vector<float> want_square = {0, max, max, max, max, max, max, 2, 8, max};

  ir::CpuExecutor ref(g, {ir::cpu::Tensor::from_f32({V, 1}, table)});
  const std::vector<ir::cpu::Tensor> in = {ir::cpu::Tensor::from_i32({V}, toks), ir::cpu::Tensor::from_i32({V}, pos)};
  const auto r = ref.run(in);
  EXPECT_EQ(r.at(0).to_f32(), want_cast);
  EXPECT_EQ(r.at(1).to_f32(), want_square);

  const FuseOptions none{false, false, false, false, false, false, false, false, false};
  for (const bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    StagedProgram prog = lift(g);
    fuse(prog, fused ? FuseOptions{} : none);
    StagedExecutor staged(prog, {table});
    const auto got = staged.step({toks, pos}, V);
    EXPECT_EQ(got.at(0), want_cast);
    EXPECT_EQ(got.at(1), want_square);
  }
}

}  // namespace
}  // namespace lg::lift::test
