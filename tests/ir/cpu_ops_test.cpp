// Every primitive of the CPU executor against a naive loop written out here, on fresh random
// inputs. Tolerances: elementwise ops must agree exactly or to 1 ulp-ish (2e-6 relative, the
// float libm may differ from the double one); contractions to 1e-5 relative of the row norm,
// which fp32 accumulation over K <= 128 terms of magnitude <= 1 stays well within.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>

#include "ir/cpu_moe.h"
#include "ir/cpu_ops.h"
#include "random.h"
#include "support/error.h"

namespace lg::ir {
namespace {

using cpu::Tensor;
using test::at_f;
using test::random_f32;
using test::random_i32;
using test::unravel;

double naive_unary(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1 / std::sqrt(x);
    case Op::Recip: return 1 / x;
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return 1 / (1 + std::exp(-x));
    case Op::Erf: return std::erf(x);
    default: return NAN;
  }
}

TEST(CpuOps, UnaryMatchesLibmOnAPermutedView) {
  for (Op op : {Op::Neg, Op::Abs, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Recip, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid,
                Op::Erf}) {
    SCOPED_TRACE(op_name(op));
    Tensor x = random_f32({3, 5});
    if (op == Op::Log || op == Op::Sqrt || op == Op::Rsqrt)  // keep inside the domain
      x = cpu::binary(Op::Add, cpu::unary(Op::Abs, x, DType::F32), Tensor::from_f32({}, {0.1f}), DType::F32);
    const Tensor xt = cpu::permute(x, {1, 0});  // strided input
    const Tensor y = cpu::unary(op, xt, DType::F32);
    ASSERT_EQ(y.shape, (std::vector<int64_t>{5, 3}));
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const double want = naive_unary(op, at_f(x, {j, i}));
        EXPECT_NEAR(at_f(y, {i, j}), want, 2e-6 * std::max(1.0, std::fabs(want)));
      }
  }
}

TEST(CpuOps, CastTruncatesTowardZeroAndBoolIsNonZero) {
  const Tensor x = Tensor::from_f32({4}, {-1.7f, -0.2f, 0.0f, 2.9f});
  EXPECT_EQ(cpu::unary(Op::Cast, x, DType::I32).to_i32(), (std::vector<int32_t>{-1, 0, 0, 2}));
  const Tensor b = cpu::unary(Op::Cast, x, DType::Bool);
  EXPECT_EQ(b.dtype, DType::Bool);
  EXPECT_EQ(b.to_i32(), (std::vector<int32_t>{1, 1, 0, 1}));
  const Tensor i = Tensor::from_i32({2}, {7, -3});
  EXPECT_EQ(cpu::unary(Op::Cast, i, DType::BF16).to_f32(), (std::vector<float>{7.0f, -3.0f}));
}

// A float past the i32 range, or NaN, stored into i32 was a plain C++ cast: undefined behaviour.
// It is defined as CUDA's conversion is: saturate at the range's ends, NaN gives 0.
TEST(CpuOps, CastToI32SaturatesAndNanIsZero) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_f32({7}, {3e9f, -3e9f, 2147483648.0f, -2147483648.0f, inf, -inf,
                                          std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(cpu::unary(Op::Cast, x, DType::I32).to_i32(),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0}));
  // Arithmetic whose float result is stored as i32 converts the same way.
  const Tensor big = Tensor::from_f32({1}, {1e10f});
  EXPECT_EQ(cpu::unary(Op::Cast, cpu::binary(Op::Mul, big, big, DType::F32), DType::I32).to_i32(),
            (std::vector<int32_t>{INT32_MAX}));
}

// A step past the dim leaves one element (the stride times such a step overflowed int64).
TEST(CpuOps, SliceWithAStepPastTheDimIsOneElement) {
  const Tensor x = Tensor::from_f32({2, 8}, {0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17});
  const Tensor s = cpu::slice(x, 1, 3, 8, INT64_MAX);
  ASSERT_EQ(s.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(s.to_f32(), (std::vector<float>{3, 13}));
  EXPECT_EQ(cpu::slice(x, 1, 0, 8, 3).shape, (std::vector<int64_t>{2, 3}));
}

float naive_binary(Op op, float a, float b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Pow: return std::pow(std::fabs(a), b);
    case Op::Maximum: return a > b ? a : b;
    case Op::Minimum: return a < b ? a : b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    default: return NAN;
  }
}

TEST(CpuOps, BinaryBroadcastsLikeNumpy) {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Maximum, Op::Minimum, Op::Lt, Op::Le, Op::Gt,
                Op::Ge, Op::Eq, Op::Ne}) {
    SCOPED_TRACE(op_name(op));
    Tensor a = random_f32({4, 1, 5});
    const Tensor b = random_f32({3, 5});  // lower rank: right-aligned
    // Make some elements equal so Eq/Le/Ge see ties.
    (*a.f)[0] = at_f(b, {0, 0});
    if (op == Op::Pow) a = cpu::unary(Op::Abs, a, DType::F32);
    const bool cmp = op >= Op::Lt;
    const Tensor y = cpu::binary(op, a, b, cmp ? DType::Bool : DType::F32);
    ASSERT_EQ(y.shape, (std::vector<int64_t>{4, 3, 5}));
    EXPECT_EQ(y.dtype, cmp ? DType::Bool : DType::F32);
    for (int64_t l = 0; l < y.numel(); ++l) {
      const auto idx = unravel(l, y.shape);
      const float want = naive_binary(op, at_f(a, {idx[0], 0, idx[2]}), at_f(b, {idx[1], idx[2]}));
      EXPECT_NEAR(at_f(y, idx), want, 2e-6 * std::max(1.0f, std::fabs(want)));
    }
  }
}

TEST(CpuOps, IntegerArithmeticStaysInteger) {
  const Tensor a = random_i32({6}, -50, 50), b = random_i32({6}, 1, 9);
  const Tensor q = cpu::binary(Op::Div, a, b, DType::I32);
  const Tensor s = cpu::binary(Op::Add, a, b, DType::I32);
  EXPECT_EQ(q.dtype, DType::I32);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(q.to_i32()[k], a.to_i32()[k] / b.to_i32()[k]);
    EXPECT_EQ(s.to_i32()[k], a.to_i32()[k] + b.to_i32()[k]);
  }
  EXPECT_THROW(cpu::binary(Op::Div, a, Tensor::from_i32({}, {0}), DType::I32), Error);
  EXPECT_THROW(cpu::binary(Op::Add, random_f32({2, 3}), random_f32({4, 3}), DType::F32), Error);
}

TEST(CpuOps, WhereSelectsWithBroadcast) {
  const Tensor c = cpu::binary(Op::Gt, random_f32({3, 1}), random_f32({1, 4}), DType::Bool);
  const Tensor a = random_f32({3, 4});
  const Tensor b = Tensor::from_f32({}, {-7.0f});
  const Tensor y = cpu::where(c, a, b, DType::F32);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(at_f(y, {i, j}), at_f(c, {i, j}) != 0 ? at_f(a, {i, j}) : -7.0f);
}

TEST(CpuOps, ReduceEveryAxisWithAndWithoutKeepdim) {
  const Tensor x = cpu::permute(random_f32({4, 3, 5}), {1, 0, 2});  // [3,4,5], strided
  for (Op op : {Op::ReduceSum, Op::ReduceMax})
    for (int32_t axis : {0, 1, 2, -1})
      for (bool keep : {false, true}) {
        SCOPED_TRACE(std::string(op_name(op)) + " axis " + std::to_string(axis) + (keep ? " keepdim" : ""));
        const Tensor y = cpu::reduce(op, x, axis, keep);
        const auto ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
        std::vector<int64_t> shape = x.shape;
        shape[ax] = 1;
        EXPECT_EQ(y.numel(), cpu::numel_of(shape));
        EXPECT_EQ(y.rank(), keep ? 3 : 2);
        for (int64_t l = 0; l < y.numel(); ++l) {
          auto idx = unravel(l, shape);
          double acc = op == Op::ReduceSum ? 0.0 : -INFINITY;
          for (int64_t r = 0; r < x.shape[ax]; ++r) {
            idx[ax] = r;
            acc = op == Op::ReduceSum ? acc + at_f(x, idx) : std::max<double>(acc, at_f(x, idx));
          }
          EXPECT_NEAR(y.to_f32()[static_cast<size_t>(l)], acc, 1e-6);
        }
      }
}

/// Naive [.., M, K] @ [.., K, N] in double with explicit broadcasting of the batch dims.
void expect_matmul(const Tensor& a, const Tensor& b) {
  const Tensor y = cpu::matmul(a, b);
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  std::vector<int64_t> batch(y.shape.begin(), y.shape.end() - 2);
  for (int64_t l = 0; l < y.numel(); ++l) {
    const auto idx = unravel(l, y.shape);
    auto pick = [&](const Tensor& t, int64_t r, int64_t c) {
      std::vector<int64_t> ti(t.shape.size());
      const size_t pad = y.shape.size() - t.shape.size();
      for (size_t d = 0; d + 2 < t.shape.size(); ++d) ti[d] = t.shape[d] == 1 ? 0 : idx[pad + d];
      ti[t.shape.size() - 2] = r;
      ti[t.shape.size() - 1] = c;
      return static_cast<double>(at_f(t, ti));
    };
    double want = 0, mag = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double p = pick(a, idx[idx.size() - 2], j) * pick(b, j, idx.back());
      want += p;
      mag += std::fabs(p);
    }
    ASSERT_NEAR(y.to_f32()[static_cast<size_t>(l)], want, 1e-6 * std::max(1.0, mag)) << "m " << m << " n " << n;
  }
}

TEST(CpuOps, MatMulAgainstNaiveLoops) {
  expect_matmul(random_f32({7, 33}), random_f32({33, 9}));                            // plain GEMM
  expect_matmul(random_f32({2, 3, 4, 16}), random_f32({16, 6}));                      // batch folded into M
  expect_matmul(random_f32({2, 1, 4, 5}), random_f32({3, 5, 6}));                     // broadcast batch
  expect_matmul(random_f32({5, 12}), cpu::permute(random_f32({10, 12}), {1, 0}));     // x @ W.T
  expect_matmul(random_f32({1, 64}), cpu::permute(random_f32({100, 64}), {1, 0}));    // GEMV, W.T
  expect_matmul(random_f32({1, 64}), random_f32({64, 100}));                          // GEMV, plain
  expect_matmul(cpu::permute(random_f32({8, 3}), {1, 0}), random_f32({8, 5}));        // a transposed
  expect_matmul(cpu::slice(random_f32({6, 10}), 1, 1, 9, 2), random_f32({4, 3}));     // a strided (copied)
  EXPECT_THROW(cpu::matmul(random_f32({3, 4}), random_f32({5, 2})), Error);
}

TEST(CpuOps, GatherPicksRowsAndRejectsBadIds) {
  const Tensor table = random_f32({10, 2, 3});
  const Tensor idx = random_i32({2, 4}, 0, 9);
  const Tensor y = cpu::gather(table, idx);
  ASSERT_EQ(y.shape, (std::vector<int64_t>{2, 4, 2, 3}));
  for (int64_t l = 0; l < y.numel(); ++l) {
    const auto i = unravel(l, y.shape);
    EXPECT_EQ(at_f(y, i), at_f(table, {static_cast<int64_t>(at_f(idx, {i[0], i[1]})), i[2], i[3]}));
  }
  EXPECT_THROW(cpu::gather(table, Tensor::from_i32({1}, {10})), Error);
  EXPECT_THROW(cpu::gather(table, Tensor::from_i32({1}, {-1})), Error);
}

TEST(CpuOps, MovementOpsAreViewsWithTheRightElements) {
  const Tensor x = random_f32({2, 3, 4});
  const Tensor p = cpu::permute(x, {2, 0, 1});
  EXPECT_EQ(p.f.get(), x.f.get());  // a view
  for (int64_t l = 0; l < p.numel(); ++l) {
    const auto i = unravel(l, p.shape);
    EXPECT_EQ(at_f(p, i), at_f(x, {i[1], i[2], i[0]}));
  }
  const Tensor r = cpu::reshape(x, {6, 4});
  EXPECT_EQ(r.f.get(), x.f.get());
  EXPECT_EQ(r.to_f32(), x.to_f32());
  const Tensor rp = cpu::reshape(p, {4, 6});  // not contiguous: copied in p's order
  EXPECT_EQ(rp.to_f32(), p.to_f32());
  EXPECT_THROW(cpu::reshape(x, {5, 5}), Error);
  const Tensor s = cpu::slice(x, 2, 1, 4, 2);
  ASSERT_EQ(s.shape, (std::vector<int64_t>{2, 3, 2}));
  for (int64_t l = 0; l < s.numel(); ++l) {
    const auto i = unravel(l, s.shape);
    EXPECT_EQ(at_f(s, i), at_f(x, {i[0], i[1], 1 + 2 * i[2]}));
  }
  EXPECT_THROW(cpu::slice(x, 2, 1, 5, 1), Error);
  const Tensor y = random_f32({2, 1, 4});
  const Tensor cat_in[] = {x, y};
  const Tensor c = cpu::concat(cat_in, 1);
  ASSERT_EQ(c.shape, (std::vector<int64_t>{2, 4, 4}));
  for (int64_t l = 0; l < c.numel(); ++l) {
    const auto i = unravel(l, c.shape);
    EXPECT_EQ(at_f(c, i), i[1] < 3 ? at_f(x, i) : at_f(y, {i[0], 0, i[2]}));
  }
  EXPECT_EQ(cpu::arange(5).to_i32(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

// topk's order (docs/language.md; torch.topk, sorted): larger first, NaN largest, equal values
// (-0 equal to +0) by the lower index, the values themselves returned (-0 stays -0). The compiled
// lane's top-k kernel ranks 64-bit keys made to give this same order (src/emit/cuda/experts.cpp).
TEST(CpuOps, TopkOrdersNanFirstAndEqualValuesByIndex) {
  const float nan = NAN, inf = INFINITY;
  const Tensor x = Tensor::from_f32({2, 7}, {1.0f, nan, 2.0f, 2.0f, -0.0f, nan, -inf,  //
                                             0.0f, -0.0f, -inf, 3.0f, 0.0f, -1.0f, -inf});
  EXPECT_EQ(cpu::topk(x, 7, -1, true).to_i32(), (std::vector<int32_t>{1, 5, 2, 3, 0, 4, 6, 3, 0, 1, 4, 5, 2, 6}));
  const std::vector<float> v = cpu::topk(x, 7, -1, false).to_f32();
  const std::vector<float> want = {nan, nan, 2.0f, 2.0f, 1.0f, -0.0f, -inf, 3.0f, 0.0f, -0.0f, 0.0f, -1.0f, -inf, -inf};
  ASSERT_EQ(v.size(), want.size());
  for (size_t j = 0; j < v.size(); ++j) {
    EXPECT_EQ(std::isnan(v[j]), std::isnan(want[j])) << j;
    if (!std::isnan(want[j])) {
      EXPECT_EQ(v[j], want[j]) << j;
    }
    EXPECT_EQ(std::signbit(v[j]), std::signbit(want[j])) << j;
  }
  // The k best only: the first k of the full order.
  EXPECT_EQ(cpu::topk(x, 3, -1, true).to_i32(), (std::vector<int32_t>{1, 5, 2, 3, 0, 1}));
}

TEST(CpuOps, StateWriteInPlaceOnlyWhenSoleOwner) {
  // kcache[L=2, KV=3, S=6, Dh=4]; write layer 1 at positions {4, 1}.
  const Tensor value = random_f32({3, 2, 4});
  const Tensor pos = Tensor::from_i32({2}, {4, 1});
  Tensor state = random_f32({2, 3, 6, 4});
  const std::vector<float> before = state.to_f32();
  const float* buf = state.f->data();
  const Tensor shared = state;  // an older version still in use: must not change
  Tensor copy = cpu::state_write(state, value, pos, {1}, 1);
  EXPECT_NE(copy.f->data(), buf);
  EXPECT_EQ(shared.to_f32(), before);
  state = Tensor{};
  Tensor sole = Tensor::from_f32({2, 3, 6, 4}, before);
  const float* sole_buf = sole.f->data();
  Tensor inplace = cpu::state_write(std::move(sole), value, pos, {1}, 1);
  EXPECT_EQ(inplace.f->data(), sole_buf);
  for (const Tensor* out : {&copy, &inplace})
    for (int64_t l = 0; l < out->numel(); ++l) {
      const auto i = unravel(l, out->shape);
      float want = before[static_cast<size_t>(l)];
      if (i[0] == 1 && (i[2] == 4 || i[2] == 1)) want = at_f(value, {i[1], i[2] == 4 ? 0 : 1, i[3]});
      EXPECT_EQ(at_f(*out, i), want);
    }
  EXPECT_THROW(cpu::state_write(inplace, value, Tensor::from_i32({2}, {6, 0}), {1}, 1), Error);
  EXPECT_THROW(cpu::state_write(inplace, random_f32({3, 2, 5}), pos, {1}, 1), Error);
}

TEST(CpuOps, AttentionIsCausalGqaSoftmax) {
  const int64_t T = 3, H = 4, KV = 2, S = 9, Dh = 8;
  const Tensor q = random_f32({T, H, Dh}), k = random_f32({KV, S, Dh}), v = random_f32({KV, S, Dh});
  const Tensor pos = Tensor::from_i32({T}, {2, 5, 8});
  const double scale = 1 / std::sqrt(static_cast<double>(Dh));
  const Tensor y = cpu::attention(q, k, v, pos, scale, 2);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / 2, n = at_f(pos, {t}) + 1;
      std::vector<double> w(static_cast<size_t>(n));
      double mx = -INFINITY, sum = 0;
      for (int64_t s = 0; s < n; ++s) {
        double d = 0;
        for (int64_t j = 0; j < Dh; ++j) d += at_f(q, {t, h, j}) * at_f(k, {g, s, j});
        w[static_cast<size_t>(s)] = d * scale;
        mx = std::max(mx, d * scale);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < Dh; ++j) {
        double o = 0;
        for (int64_t s = 0; s < n; ++s) o += w[static_cast<size_t>(s)] / sum * at_f(v, {g, s, j});
        EXPECT_NEAR(at_f(y, {t, h, j}), o, 1e-6);
      }
    }
  EXPECT_THROW(cpu::attention(q, k, v, Tensor::from_i32({T}, {0, 1, 9}), scale, 2), Error);
  EXPECT_THROW(cpu::attention(q, k, v, pos, scale, 3), Error);
}

TEST(CpuOps, AttentionRowsOfALongPrefillEqualSingleQueryCalls) {
  // A prefill's query t must see exactly what a decode step at position t sees; the GEMM may
  // sum in another order for 64 rows than for 1, so equal to fp32 rounding (1e-6).
  const int64_t T = 64, H = 4, KV = 1, S = 80, Dh = 64;
  const Tensor q = random_f32({T, H, Dh}), k = random_f32({KV, S, Dh}), v = random_f32({KV, S, Dh});
  std::vector<int32_t> p(T);
  for (int32_t t = 0; t < T; ++t) p[static_cast<size_t>(t)] = t + 3;
  const Tensor y = cpu::attention(q, k, v, Tensor::from_i32({T}, p), 0.125, 4);
  for (int64_t t : {int64_t{0}, int64_t{31}, int64_t{63}}) {
    const Tensor one = cpu::attention(cpu::slice(q, 0, t, t + 1, 1), k, v,
                                      Tensor::from_i32({1}, {p[static_cast<size_t>(t)]}), 0.125, 4);
    const std::vector<float> row = cpu::slice(y, 0, t, t + 1, 1).to_f32(), want = one.to_f32();
    for (size_t j = 0; j < row.size(); ++j) EXPECT_NEAR(row[j], want[j], 1e-6) << "t " << t << " j " << j;
  }
}

/// out[t, h] by brute force over every cache row: scores of rows outside pos[t] - window + 1 ..=
/// pos[t] (window 0: 0 ..= pos[t]) are masked to -inf, the rest soft-capped (softcap > 0) after
/// the scale, then a softmax in double.
std::vector<double> masked_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<int32_t>& pos,
                                     double scale, int64_t group, int64_t window, double softcap) {
  const int64_t T = q.shape[0], H = q.shape[1], Dh = q.shape[2], S = k.shape[1];
  std::vector<double> out(static_cast<size_t>(T * H * Dh));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / group, p = pos[static_cast<size_t>(t)];
      std::vector<double> w(static_cast<size_t>(S));
      double mx = -INFINITY, sum = 0;
      for (int64_t s = 0; s < S; ++s) {
        double d = 0;
        for (int64_t j = 0; j < Dh; ++j) d += at_f(q, {t, h, j}) * at_f(k, {g, s, j});
        d *= scale;
        if (softcap > 0) d = softcap * std::tanh(d / softcap);
        const bool seen = s <= p && (window == 0 || p - s < window);  // transformers: kv_idx > q_idx - window
        w[static_cast<size_t>(s)] = seen ? d : -INFINITY;
        mx = std::max(mx, w[static_cast<size_t>(s)]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < Dh; ++j) {
        double o = 0;
        for (int64_t s = 0; s < S; ++s) o += w[static_cast<size_t>(s)] / sum * at_f(v, {g, s, j});
        out[static_cast<size_t>((t * H + h) * Dh + j)] = o;
      }
    }
  return out;
}

// A sliding window and soft-capping: a prefill longer than the window (rows entering and leaving
// it), decode-like single queries, against the brute-force masked reference; with a window equal
// to or past every position the result is the plain causal one.
TEST(CpuOps, AttentionWindowAndSoftcapEqualTheBruteForceMask) {
  const int64_t T = 20, H = 4, KV = 2, S = 24, Dh = 8;
  const Tensor q = random_f32({T, H, Dh}), k = random_f32({KV, S, Dh}), v = random_f32({KV, S, Dh});
  std::vector<int32_t> p(T);
  for (int32_t t = 0; t < T; ++t) p[static_cast<size_t>(t)] = t + 2;  // a chunk after 2 cached positions
  const Tensor pos = Tensor::from_i32({T}, p);
  // Scores of random unit-range inputs are small; a large scale makes the cap bite (|x| up to ~6).
  for (const auto& [window, softcap, scale] : std::vector<std::tuple<int64_t, double, double>>{
           {5, 0.0, 0.35}, {1, 0.0, 0.35}, {7, 2.5, 3.0}, {0, 2.5, 3.0}, {S, 0.0, 0.35}}) {
    SCOPED_TRACE(testing::Message() << "window " << window << ", softcap " << softcap);
    const Tensor y = cpu::attention(q, k, v, pos, scale, 2, nullptr, window, softcap);
    const std::vector<double> want = masked_attention(q, k, v, p, scale, 2, window, softcap);
    const std::vector<float> got = y.to_f32();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;
    for (int64_t t : {int64_t{0}, int64_t{9}, int64_t{19}}) {
      const Tensor one = cpu::attention(cpu::slice(q, 0, t, t + 1, 1), k, v,
                                        Tensor::from_i32({1}, {p[static_cast<size_t>(t)]}), scale, 2, nullptr, window, softcap);
      const std::vector<float> row = one.to_f32();
      for (size_t j = 0; j < row.size(); ++j) EXPECT_NEAR(row[j], want[static_cast<size_t>(t * H * Dh) + j], 1e-6);
    }
  }
  // The window changes the result (the test above could not pass with the window ignored).
  const std::vector<float> full = cpu::attention(q, k, v, pos, 0.35, 2).to_f32();
  const std::vector<float> windowed = cpu::attention(q, k, v, pos, 0.35, 2, nullptr, 5).to_f32();
  EXPECT_GT(std::fabs(full.back() - windowed.back()), 1e-4);
  EXPECT_THROW(cpu::attention(q, k, v, pos, 0.35, 2, nullptr, -1), Error);
}

// A query reads no cache row before its window: rows outside it hold NaN, the output is finite and
// equals the one over clean rows (one query at a time, so no other query's window covers them).
TEST(CpuOps, AttentionWindowReadsNoRowBeforeIt) {
  const int64_t H = 2, KV = 1, S = 32, Dh = 16, W = 6;
  const Tensor q = random_f32({1, H, Dh}), k = random_f32({KV, S, Dh}), v = random_f32({KV, S, Dh});
  for (int32_t p : {3, 5, 6, 20, 31}) {
    std::vector<float> kp = k.to_f32(), vp = v.to_f32();
    for (int64_t s = 0; s < S; ++s)
      if (s <= p - W || s > p)
        for (int64_t j = 0; j < Dh; ++j) kp[static_cast<size_t>(s * Dh + j)] = vp[static_cast<size_t>(s * Dh + j)] = NAN;
    const Tensor pos = Tensor::from_i32({1}, {p});
    const std::vector<float> got =
        cpu::attention(q, Tensor::from_f32({KV, S, Dh}, kp), Tensor::from_f32({KV, S, Dh}, vp), pos, 0.25, 2, nullptr, W).to_f32();
    const std::vector<float> want = cpu::attention(q, k, v, pos, 0.25, 2, nullptr, W).to_f32();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_EQ(got[j], want[j]) << "position " << p;
  }
}

}  // namespace
}  // namespace lg::ir
