// The sampled draw as runtime/draw.h defines it: the shared arithmetic (draw_math.h) against libm
// and a plain restatement of the cuts, and the draw as a race over the nucleus: each token drawn
// with its share of the mass, the skipped places never the winner's, and the pick moved by a
// rounding change of the logits only at near ties. The
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

// -ln u by neg_log_unit: its series leaves under 2^-36 and its dozen rounded operations a few
// float ulps (2^-23 each); 4 ulps bound it with room. The race's skip needs 2^-17 (draw_math.h).
TEST(Draw, NegLogIsWithinFourUlpsOfLibm) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 g(seed);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    // The ends of (0, 1) first (the uniforms nearest 0 and 1), then the race's own uniforms.
    const uint64_t j = i < 2000 ? (i % 2 ? static_cast<uint64_t>(i / 2) : (1ull << 23) - 1 - static_cast<uint64_t>(i / 2))
                                : g() >> 41;
    const float u = static_cast<float>(2 * j + 1) * 0x1p-24f;
    const double want = -std::log(static_cast<double>(u));
    worst = std::max(worst, std::abs(draw::neg_log_unit(u) - want) / want);
    // A race uniform is (2 j + 1) / 2^24 for a 23-bit j: in (0, 1), exact, as neg_log_unit was fed.
    const double r = static_cast<double>(draw::race_uniform(g(), static_cast<int32_t>(i))) * 0x1p24;
    ASSERT_TRUE(r == std::floor(r) && std::fmod(r, 2.0) == 1.0 && r < 0x1p24) << r;
  }
  EXPECT_LT(worst, 4 * 0x1p-23) << "worst relative error " << worst;
}

// Over N random keys the race draws each nucleus token for its share of the mass, and nothing
// outside the nucleus; the places it skips (race_place_below) never hide the least one. A token's
// count is binomial: within t = 6 sd + 16 of its mean, as Bernstein's inequality
// P(|X - mu| >= t) <= 2 exp(-t^2 / (2 (sd^2 + t / 3))) puts under 1e-8 for every sd here. A 6 sd
// bound alone is the normal approximation, wrong for a token of mean 0.006 drawn once (one CI run
// failed so).
TEST(Draw, TheRaceDrawsEachNucleusTokenWithItsShare) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.f, 2.f);
  const int N = 4000;
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
    for (int j = 0; j < N; ++j) {
      p.key = g();
      const int32_t drawn = draw_token(l, p);
      ++hits[drawn];
      // The race without skips: every place computed, the least packed one wins.
      uint64_t least = ~0ull;
      for (int32_t id : nucleus)
        if (mass[id] > 0) least = std::min(least, draw::race_place(draw::weight(l[id], top, p.inv_temperature), p.key, id));
      ASSERT_EQ(drawn, static_cast<int32_t>(static_cast<uint32_t>(least))) << "trial " << trial << " key " << p.key;
    }
    for (const auto& [id, n] : hits) ASSERT_TRUE(mass.count(id)) << "trial " << trial << ": token " << id << " is outside the nucleus";
    for (const auto& [id, m] : mass) {
      const double share = m / total, sd = std::sqrt(N * share * (1 - share));
      EXPECT_NEAR(hits[id], share * N, 6 * sd + 16) << "trial " << trial << " token " << id;
    }
  }
}

// A nucleus of tens of thousands of tokens (a flat row: the host selects top-p's head by mass,
// not by sorting it) is the plain one: each draw is the least place over plain_nucleus's tokens.
TEST(Draw, AWideNucleusIsThePlainOne) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<float> l(20000 + g() % 20000);
    for (float& x : l) x = trial % 3 == 0 ? std::round(4 * d(g)) / 4 : d(g);  // ties among many
    DrawParams p;
    p.inv_temperature = 1 / 1.5f;
    p.top_p = std::array<double, 4>{0.5, 0.9, 0.99, 0.999}[trial % 4];
    p.top_k = trial % 5 == 4 ? 15000 : 0;
    const std::vector<int32_t> nucleus = plain_nucleus(l, p);
    const float top = *std::max_element(l.begin(), l.end());
    for (int j = 0; j < 30; ++j) {
      p.key = g();
      uint64_t least = ~0ull;
      for (int32_t id : nucleus)
        if (draw::fixed(draw::weight(l[id], top, p.inv_temperature)) > 0)
          least = std::min(least, draw::race_place(draw::weight(l[id], top, p.inv_temperature), p.key, id));
      ASSERT_EQ(draw_token(l, p), static_cast<int32_t>(static_cast<uint32_t>(least)))
          << "trial " << trial << ", V " << l.size() << ", nucleus " << nucleus.size();
    }
  }
}

// What the race is for: logits that round slightly otherwise (a batched step against a run alone)
// move the pick only where its two best places nearly tie, with odds about the change over the
// temperature, whatever the row. An inverse CDF's pick moves with the sum of the changes before
// it, odds growing with the square root of the nucleus: over this flat row of 5,000 tokens at
// temperature 1.5 with every logit moved by up to 1e-3, a simulation (Python, rows drawn alike)
// put it at 10.6 moves in 1,000 draws, ~42 expected of these 4,000, and the race at 0.33 in 1,000
// (2 of 6,000; about the mean change of two logits over the temperature; 1.8 expected at most). 10 moves
// allow the race's with odds of a false failure under 3e-6, and not the inverse CDF's.
TEST(Draw, ARoundingChangeOfTheLogitsRarelyMovesTheDraw) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::uniform_real_distribution<float> wiggle(-1e-3f, 1e-3f);
  std::vector<float> l(5000), moved(5000);
  for (size_t i = 0; i < l.size(); ++i) {
    l[i] = d(g);
    moved[i] = l[i] + wiggle(g);
  }
  DrawParams p;
  p.inv_temperature = 1 / 1.5f;
  int moves = 0;
  for (int j = 0; j < 4000; ++j) {
    p.key = g();
    moves += draw_token(l, p) != draw_token(moved, p);
  }
  EXPECT_LE(moves, 10);
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
  p.inv_temperature = 0;
  EXPECT_THROW(draw_token(l, p), Error);
  p.inv_temperature = NAN;
  EXPECT_THROW(draw_token(l, p), Error);
}

}  // namespace
}  // namespace lg::runtime
