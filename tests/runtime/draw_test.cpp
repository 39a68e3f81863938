// The sampled draw as runtime/draw.h defines it: the shared arithmetic (draw_math.h) against libm
// and a plain restatement of the cuts, and the draw as an inverse CDF over the nucleus. The
// device kernel is held to draw_token bit for bit in tests/lanes_qwen/row_draws_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "runtime/draw.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

// Seven Taylor terms leave under 2^-27 of relative error on |r| <= ln2 / 2; the range reduction
// and nine rounded operations add a few float ulps (2^-23 each): 4 ulps bound it with room.
TEST(Draw, ExpIsWithinFourUlpsOfLibm) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> x(-87.f, 0.f);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float v = i < 1000 ? -static_cast<float>(i) * 0.087f : x(g);
    const double want = std::exp(static_cast<double>(v));
    const double got = draw::exp_nonpositive(v);
    worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LT(worst, 4 * 0x1p-23) << "worst relative error " << worst;
  EXPECT_EQ(draw::exp_nonpositive(0.f), 1.f);
  EXPECT_EQ(draw::exp_nonpositive(-87.5f), 0.f);
  EXPECT_EQ(draw::exp_nonpositive(-INFINITY), 0.f);
  EXPECT_EQ(draw::weight(3.f, 3.f, INFINITY), 1.f);  // the argmax at T -> 0: never 0 * inf
  EXPECT_EQ(draw::weight(2.f, 3.f, INFINITY), 0.f);
}

TEST(Draw, KeysOrderByLogitThenLowerId) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 20.f);
  for (int i = 0; i < 100000; ++i) {
    const float a = d(g), b = i % 3 ? d(g) : a;
    const int32_t ia = static_cast<int32_t>(g() % 200000), ib = static_cast<int32_t>(g() % 200000);
    if (ia == ib) continue;
    const bool first = a != b ? a > b : ia < ib;
    EXPECT_EQ(draw::key(a, ia) > draw::key(b, ib), first) << a << " " << ia << " / " << b << " " << ib;
  }
  EXPECT_GT(draw::key(-0.f, 1), draw::key(0.f, 2));  // -0 and +0 are one logit: the lower id first
  EXPECT_GT(draw::key(0.f, 1), draw::key(-0.f, 2));
}

/// The nucleus restated plainly: every token sorted by (logit desc, id asc), min_p's candidates,
/// the first top_k, the shortest head reaching the need.
std::vector<int32_t> plain_nucleus(const std::vector<float>& l, const DrawParams& p) {
  const float top = *std::max_element(l.begin(), l.end());
  std::vector<int32_t> order(l.size());
  for (size_t i = 0; i < l.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
  std::vector<int32_t> kept;
  for (int32_t id : order)
    if (draw::weight(l[id], top, p.inv_temperature) >= p.min_p) kept.push_back(id);
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < kept.size()) kept.resize(static_cast<size_t>(p.top_k));
  if (p.top_p < 1) {
    uint64_t mass = 0;
    for (int32_t id : kept) mass += draw::fixed(draw::weight(l[id], top, p.inv_temperature));
    const uint64_t need = draw::nucleus_need(p.top_p, mass);
    uint64_t head = 0;
    size_t n = 0;
    while (head < need) head += draw::fixed(draw::weight(l[kept[n++]], top, p.inv_temperature));
    kept.resize(n);
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

// Over a grid of J uniforms the draw is an inverse CDF: each nucleus token is drawn for
// mass / total of the grid (to one grid point), and nothing outside the nucleus ever is.
TEST(Draw, IsTheInverseCdfOfTheNucleus) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 2.f);
  const int J = 4000;
  for (int trial = 0; trial < 48; ++trial) {
    std::vector<float> l(1 + g() % 300);
    for (float& x : l) x = trial % 4 == 0 ? std::round(d(g)) : d(g);  // some rows full of ties
    DrawParams p;
    p.inv_temperature = 1.f / std::array<float, 4>{0.3f, 0.7f, 1.f, 2.5f}[trial % 4];
    p.top_k = std::array<int32_t, 4>{0, 1, 7, 40}[(trial / 4) % 4];
    p.top_p = std::array<double, 3>{1, 0.9, 0.35}[trial % 3];
    p.min_p = std::array<float, 3>{0, 0.05f, 0.5f}[(trial / 3) % 3];
    const std::vector<int32_t> nucleus = plain_nucleus(l, p);
    const float top = *std::max_element(l.begin(), l.end());
    std::map<int32_t, double> mass;
    double total = 0;
    for (int32_t id : nucleus) total += mass[id] = static_cast<double>(draw::fixed(draw::weight(l[id], top, p.inv_temperature)));
    std::map<int32_t, int> hits;
    for (int j = 0; j < J; ++j) {
      p.u = (j + 0.5) / J;
      ++hits[draw_token(l, p)];
    }
    for (const auto& [id, n] : hits) ASSERT_TRUE(mass.count(id)) << "trial " << trial << ": token " << id << " is outside the nucleus";
    for (const auto& [id, m] : mass) EXPECT_NEAR(hits[id], m / total * J, 1.0) << "trial " << trial << " token " << id;
  }
}

TEST(Draw, RefusesWhatIsNotADraw) {
  DrawParams p;
  EXPECT_THROW(draw_token({}, p), Error);
  const std::vector<float> l = {1.f, 2.f};
  DrawParams q;
  q.min_p = 1.5f;  // above 1 every token would be dropped
  EXPECT_THROW(draw_token(l, q), Error);
  q = {};
  q.top_p = 0;
  EXPECT_THROW(draw_token(l, q), Error);
  q = {};
  q.u = 1;
  EXPECT_THROW(draw_token(l, q), Error);
  p.inv_temperature = 0;
  EXPECT_THROW(draw_token(l, p), Error);
  p.inv_temperature = NAN;
  EXPECT_THROW(draw_token(l, p), Error);
}

}  // namespace
}  // namespace lg::runtime
