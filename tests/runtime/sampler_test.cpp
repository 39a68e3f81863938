// The sampler: greedy is argmax with the lowest id winning a tie; sampling follows the
// tempered softmax; min_p / top-k / top-p cut the candidates; a seed makes a run reproducible.
// The penalties are in penalties_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/draw.h"
#include "runtime/sampler.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(l), 1);
  Sampler s({});
  EXPECT_TRUE(s.greedy());
  EXPECT_EQ(s.pick(l), 1);
}

TEST(Sampler, FrequenciesFollowTheTemperedSoftmax) {
  const std::vector<float> l = {1.0f, 0.0f, -0.5f, 2.0f};
  const double temp = 0.7;
  std::vector<double> p(l.size());
  double z = 0;
  for (size_t k = 0; k < l.size(); ++k) z += p[k] = std::exp(l[k] / temp);
  for (double& x : p) x /= z;
  Sampler s({temp, 0, 1, std::random_device{}()});
  const int n = 40000;
  std::vector<int> count(l.size(), 0);
  for (int k = 0; k < n; ++k) ++count[static_cast<size_t>(s.pick(l))];
  // Standard error of a frequency is sqrt(p(1-p)/n) <= 0.0025 here: 0.015 is 6 sigma.
  for (size_t k = 0; k < l.size(); ++k) EXPECT_NEAR(count[k] / double(n), p[k], 0.015) << "token " << k;
}

// A temperature near zero is the greedy limit: 1 / T overflows (2.3e-308: logit / T is inf) or is
// inf itself (a subnormal T); the draw must still be the argmax, never a NaN weight's id 0.
TEST(Sampler, TinyTemperaturesPickTheArgmax) {
  const std::vector<float> l = {-3.0f, 10.0f, 9.5f, 12.25f, 0.0f};
  for (double t : {1e-3, 1e-300, 2.3e-308, 1e-310, 5e-324}) {
    for (double top_p : {1.0, 0.9}) {
      Sampler s({t, 0, top_p, 3});
      for (int i = 0; i < 20; ++i) EXPECT_EQ(s.pick(l), 3) << "temperature " << t << ", top_p " << top_p;
    }
  }
}

TEST(Sampler, TopKAndTopPCutTheTail) {
  const std::vector<float> l = {3.0f, 2.9f, 0.0f, -1.0f, 2.8f};
  Sampler k1({1.0, 1, 1, 7});
  for (int i = 0; i < 200; ++i) EXPECT_EQ(k1.pick(l), 0);
  Sampler k2({5.0, 2, 1, 7});  // hot temperature, but only ids 0 and 1 survive
  for (int i = 0; i < 500; ++i) {
    const int32_t t = k2.pick(l);
    EXPECT_TRUE(t == 0 || t == 1) << t;
  }
  // Probabilities at temperature 1: ~{0.36, 0.33, 0.02, 0.01, 0.29}; top_p 0.5 keeps {0, 1}.
  Sampler p({1.0, 0, 0.5, 9});
  for (int i = 0; i < 500; ++i) {
    const int32_t t = p.pick(l);
    EXPECT_TRUE(t == 0 || t == 1) << t;
  }
}

// min_p (vLLM's): after temperature, tokens less likely than min_p times the likeliest are
// dropped, and the draw follows the renormalised softmax of the rest.
TEST(Sampler, MinPDropsTheTailAfterTemperature) {
  const std::vector<float> l = {1.0f, 0.0f, -0.5f, 2.0f, -3.0f, 1.8f};
  const double temp = 1.3, min_p = 0.3;
  std::vector<double> p(l.size());
  const double top = 2.0;
  double z = 0;
  for (size_t k = 0; k < l.size(); ++k) {
    const double ratio = std::exp((l[k] - top) / temp);  // probability over the largest one's
    p[k] = ratio < min_p ? 0 : ratio;
    z += p[k];
  }
  for (double& x : p) x /= z;
  ASSERT_GT(p[0], 0);  // the cut falls inside the distribution: some kept, some dropped
  ASSERT_EQ(p[2], 0);
  SamplingOptions o{temp, 0, 1, std::random_device{}()};
  o.min_p = min_p;
  Sampler s(o);
  const int n = 40000;
  std::vector<int> count(l.size(), 0);
  for (int k = 0; k < n; ++k) ++count[static_cast<size_t>(s.pick(l))];
  for (size_t k = 0; k < l.size(); ++k) {
    if (p[k] == 0) EXPECT_EQ(count[k], 0) << "token " << k;
    else EXPECT_NEAR(count[k] / double(n), p[k], 0.015) << "token " << k;
  }
  // min_p 1 keeps the likeliest alone, whatever the temperature; top-k then cannot widen it.
  SamplingOptions one{50.0, 3, 1, 5};
  one.min_p = 1;
  Sampler argmax_only(one);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(argmax_only.pick(l), 3);
  // Greedy ignores min_p (the argmax is never dropped).
  SamplingOptions greedy;
  greedy.min_p = 0.9;
  Sampler g(greedy);
  EXPECT_FALSE(g.needs_logits());
  EXPECT_EQ(g.pick(l), 3);
}

TEST(Sampler, NucleusWiderThanTheSortedHeadIsExact) {
  // 5000 equal logits: the order is by id and top_p 0.9001 keeps ids 0..4500 (4501/5000 is the
  // first prefix reaching it, clear of rounding), far past the head the sampler sorts first.
  const std::vector<float> l(5000, 0.25f);
  Sampler s({1.0, 0, 0.9001, std::random_device{}()});
  int beyond_head = 0;
  for (int i = 0; i < 3000; ++i) {
    const int32_t t = s.pick(l);
    ASSERT_LE(t, 4500);
    beyond_head += t >= 1024;
  }
  EXPECT_GT(beyond_head, 3000 / 2);  // ~77% of the kept mass lies past id 1024
}

// A greedy request's draw, as a lane makes it when penalties make the pick read the row: top-k 1
// keeps the likeliest token, the lowest id of a tie (-0 and +0 are one logit), as argmax does; it
// takes no key from the generator.
TEST(Sampler, AGreedyDrawIsTheArgmax) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 g(seed);
  Sampler greedy(SamplingOptions{});
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<float> l(1 + g() % 200);
    for (float& x : l) x = static_cast<float>(static_cast<int>(g() % 7) - 3) * (trial % 2 ? 0.5f : 1e-3f);
    if (trial % 3 == 0)
      for (float& x : l) x = x == 0 ? (g() % 2 ? -0.0f : 0.0f) : x;
    const DrawParams d = greedy.next_draw();
    EXPECT_EQ(d.top_k, 1);
    EXPECT_EQ(d.key, 0u);
    ASSERT_EQ(draw_token(l, d), argmax(l)) << "trial " << trial;
  }
}

TEST(Sampler, SameSeedSameTokens) {
  std::vector<float> l(1000);
  std::mt19937 g(std::random_device{}());
  std::normal_distribution<float> d;
  for (float& x : l) x = d(g);
  Sampler a({1.0, 50, 0.9, 42}), b({1.0, 50, 0.9, 42}), c({1.0, 50, 0.9, 43});
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 64; ++i) {
    ta.push_back(a.pick(l));
    tb.push_back(b.pick(l));
    tc.push_back(c.pick(l));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_THROW(Sampler({-1.0, 0, 1, 0}), Error);
  EXPECT_THROW(Sampler({1.0, -2, 1, 0}), Error);
  EXPECT_THROW(Sampler({1.0, 0, 0.0, 0}), Error);
  EXPECT_THROW(Sampler({1.0, 0, 1.5, 0}), Error);
  EXPECT_THROW(Sampler({1.0, 0, 1, 0, -0.1}), Error);
  EXPECT_THROW(Sampler({1.0, 0, 1, 0, 0, {0.0, 0, 0}}), Error);
}

}  // namespace
}  // namespace lg::runtime
