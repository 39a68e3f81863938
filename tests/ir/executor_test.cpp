// The executor over hand-built graphs: state across steps (decode after prefill equals one
// prefill over the whole sequence), in-place cache updates, binding checks, and errors that name
// the node and its source line.
#include <gtest/gtest.h>

#include <cmath>

#include "graph_builder.h"
#include "ir/cpu_executor.h"
#include "ir/cpu_ops.h"
#include "random.h"
#include "support/error.h"

namespace lg::ir {
namespace {

using cpu::Tensor;

std::vector<Tensor> random_params(const Graph& g) {
  std::vector<Tensor> ps;
  for (const ParamInfo& p : g.params) {
    std::vector<int64_t> s;
    for (const Dim& d : p.shape) s.push_back(d.coeff);
    ps.push_back(test::random_f32(s));
  }
  return ps;
}

std::vector<Tensor> step_inputs(const std::vector<int32_t>& tokens, int32_t start) {
  std::vector<int32_t> pos(tokens.size());
  for (size_t k = 0; k < pos.size(); ++k) pos[k] = start + static_cast<int32_t>(k);
  const auto T = static_cast<int64_t>(tokens.size());
  return {Tensor::from_i32({T}, tokens), Tensor::from_i32({T}, pos)};
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    d += (a[k] - b[k]) * static_cast<double>(a[k] - b[k]);
    n += static_cast<double>(b[k]) * b[k];
  }
  return std::sqrt(d / n);
}

TEST(CpuExecutor, DecodeAfterPrefillEqualsFullPrefill) {
  const Graph g = test::tiny_attention_graph();
  const std::vector<Tensor> params = random_params(g);
  const std::vector<int32_t> seq = test::random_i32({20}, 0, 39).to_i32();
  for (size_t prompt : {1u, 2u, 7u, 19u}) {
    SCOPED_TRACE("prompt length " + std::to_string(prompt));
    CpuExecutor step(g, params), full(g, params);
    step.run(step_inputs({seq.begin(), seq.begin() + static_cast<long>(prompt)}, 0));
    const Tensor dec = step.run(step_inputs({seq[prompt]}, static_cast<int32_t>(prompt)))[0];
    const Tensor all = full.run(step_inputs({seq.begin(), seq.begin() + static_cast<long>(prompt) + 1}, 0))[0];
    ASSERT_EQ(dec.shape, (std::vector<int64_t>{1, 40}));
    const std::vector<float> last = cpu::slice(all, 0, static_cast<int64_t>(prompt), static_cast<int64_t>(prompt) + 1, 1).to_f32();
    EXPECT_LT(rel_err(dec.to_f32(), last), 1e-5);
    // The caches agree too (same rows written, the rest still zero); only to rounding, since
    // BLAS sums a one-row GEMV in a different order than a many-row GEMM.
    EXPECT_LT(rel_err(step.state(0).to_f32(), full.state(0).to_f32()), 1e-6);
  }
}

TEST(CpuExecutor, LastPositionRunEqualsTheLastRowOfAFullRun) {
  const Graph g = test::tiny_attention_graph();
  const std::vector<Tensor> params = random_params(g);
  CpuExecutor a(g, params), b(g, params);
  const std::vector<int32_t> seq = test::random_i32({9}, 0, 39).to_i32();
  const Tensor full = a.run(step_inputs(seq, 0))[0];
  const Tensor last = b.run_last_position(step_inputs(seq, 0))[0];
  ASSERT_EQ(last.shape, (std::vector<int64_t>{1, 40}));
  EXPECT_LT(rel_err(last.to_f32(), cpu::slice(full, 0, 8, 9, 1).to_f32()), 1e-6);
  EXPECT_LT(rel_err(a.state(1).to_f32(), b.state(1).to_f32()), 1e-6);  // the cache is written the same
}

TEST(CpuExecutor, CacheIsUpdatedInPlaceAcrossSteps) {
  const Graph g = test::tiny_attention_graph();
  CpuExecutor ex(g, random_params(g));
  const float* before = ex.state(0).f->data();
  ex.run(step_inputs({1, 2, 3}, 0));
  ex.run(step_inputs({4}, 3));
  EXPECT_EQ(ex.state(0).f->data(), before);
  ex.reset();
  for (float v : ex.state(0).to_f32()) ASSERT_EQ(v, 0.0f);
}

TEST(CpuExecutor, LogitsMatchAHandComputedForward) {
  // One token at position 0 attends only to itself, so attention returns v: the forward is
  // a few matmuls that are easy to write out.
  const Graph g = test::tiny_attention_graph();
  const std::vector<Tensor> p = random_params(g);
  CpuExecutor ex(g, p);
  const int32_t tok = 11;
  const Tensor out = ex.run(step_inputs({tok}, 0))[0];
  const auto E = p[0].to_f32(), wv = p[3].to_f32(), wo = p[4].to_f32();
  std::vector<double> x(16), v(16), h(16);
  for (int j = 0; j < 16; ++j) x[j] = E[tok * 16 + j];
  for (int r = 0; r < 16; ++r)
    for (int j = 0; j < 16; ++j) v[r] += wv[r * 16 + j] * x[j];
  // Heads 0,1 read KV head 0 (= v[0:8]); heads 2,3 read KV head 1 (= v[8:16]).
  std::vector<double> att(32);
  for (int hd = 0; hd < 4; ++hd)
    for (int j = 0; j < 8; ++j) att[hd * 8 + j] = v[(hd / 2) * 8 + j];
  for (int r = 0; r < 16; ++r) {
    h[r] = x[r];
    for (int j = 0; j < 32; ++j) h[r] += wo[r * 32 + j] * att[j];
  }
  for (int t = 0; t < 40; ++t) {
    double want = 0;
    for (int j = 0; j < 16; ++j) want += E[t * 16 + j] * h[j];
    EXPECT_NEAR(out.to_f32()[t], want, 1e-5);
  }
}

TEST(CpuExecutor, BindingAndInputErrorsNameTheCulprit) {
  const Graph g = test::tiny_attention_graph();
  std::vector<Tensor> p = random_params(g);
  p[1] = test::random_f32({31, 16});
  try {
    CpuExecutor bad(g, p);
    FAIL() << "bad param shape accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("param wq (tensor \"w.wq\")"), std::string::npos) << e.what();
  }
  CpuExecutor ex(g, random_params(g));
  EXPECT_THROW(ex.run(step_inputs(std::vector<int32_t>(65, 1), 0)), Error);  // T above its bound
  const std::vector<Tensor> mismatched = {Tensor::from_i32({3}, {1, 2, 3}), Tensor::from_i32({2}, {0, 1})};
  EXPECT_THROW(ex.run(mismatched), Error);
  try {
    ex.run(step_inputs({40}, 0));  // token id outside the embedding
    FAIL() << "out-of-range token accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("test.lg:"), std::string::npos) << m;
    EXPECT_NE(m.find("gather"), std::string::npos) << m;
    EXPECT_NE(m.find("index 40"), std::string::npos) << m;
  }
  // A position past the cache is an error, not a write out of bounds.
  EXPECT_THROW(ex.run(step_inputs({1}, 32)), Error);
}

// A value too large for the machine (here 2^46 f32, past any address space, broadcast from two
// vectors: a program can pass lg check with one) is an error naming its statement, not a bare
// std::bad_alloc (new-user pass: `lg run` printed only "std::bad_alloc").
TEST(CpuExecutor, AValueTooLargeForMemoryNamesItsStatement) {
  test::Builder b;
  const int64_t n = int64_t{1} << 17;  // T = 64: 2^23 elements a side
  const ValueId x = b.input("x", DType::F32, {test::Tsym(n), test::C(1)});
  const ValueId y = b.input("y", DType::F32, {test::C(1), test::Tsym(n)});
  b.g.outputs.push_back(b.bin(Op::Mul, x, y, {test::Tsym(n), test::Tsym(n)}));
  CpuExecutor ex(b.g, {});
  const std::vector<Tensor> in = {Tensor::zeros(DType::F32, {64 * n, 1}), Tensor::zeros(DType::F32, {1, 64 * n})};
  try {
    ex.run(in);
    FAIL() << "a 2^46-element value was computed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("test.lg:3"), std::string::npos) << m;  // the multiply, the builder's third node
    EXPECT_NE(m.find("out of memory computing its f32[8388608,8388608]"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace lg::ir
