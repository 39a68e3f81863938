// Log probabilities (runtime/logprobs.h) against a long-double restatement of log_softmax on
// fresh random rows; the top list against a full sort; their bounds. Their value against
// transformers' logits is held in tests/lanes_cpu/logprobs_test.cpp, the server's JSON in
// tests/server/logprobs_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "runtime/logprobs.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

std::vector<long double> reference_log_softmax(const std::vector<float>& logits) {
  long double m = logits[0];
  for (const float x : logits) m = std::max<long double>(m, x);
  long double sum = 0;
  for (const float x : logits) sum += std::exp(static_cast<long double>(x) - m);
  std::vector<long double> out;
  for (const float x : logits) out.push_back(static_cast<long double>(x) - m - std::log(sum));
  return out;
}

// A float result of a double computation: within a few float ulps of the exact value (the sum in
// double adds about 1e-16 relative; the subtraction one rounding; the cast to float half an ulp).
TEST(Logprobs, EqualLogSoftmaxOfTheRowAndTheTopIsTheSortedHead) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 g(seed);
  for (int row = 0; row < 40; ++row) {
    const size_t v = std::uniform_int_distribution<size_t>(1, 5000)(g);
    // Wide rows (a peaked distribution) and narrow ones (a flat one), some with repeated values.
    const float scale = std::uniform_real_distribution<float>(0.01f, 30.f)(g);
    std::normal_distribution<float> n(0.f, scale);
    std::vector<float> logits(v);
    for (float& x : logits) x = row % 4 == 0 ? std::round(n(g)) : n(g);
    const auto want = reference_log_softmax(logits);
    const auto chosen = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(v) - 1)(g);
    const auto top = std::uniform_int_distribution<int32_t>(0, kMaxTopLogprobs)(g);
    const TokenLogprobs got = token_logprobs(logits, chosen, top);
    SCOPED_TRACE("row " + std::to_string(row) + ", V " + std::to_string(v) + ", top " + std::to_string(top));
    ASSERT_EQ(got.chosen.id, chosen);
    const auto close = [&](float x, long double w) {
      return std::abs(static_cast<long double>(x) - w) <= 4 * 0x1p-24L * std::max<long double>(1, std::abs(w));
    };
    EXPECT_TRUE(close(got.chosen.logprob, want[static_cast<size_t>(chosen)]))
        << got.chosen.logprob << " vs " << static_cast<double>(want[static_cast<size_t>(chosen)]);
    std::vector<int32_t> order(v);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    ASSERT_EQ(got.top.size(), std::min<size_t>(static_cast<size_t>(top), v));
    for (size_t k = 0; k < got.top.size(); ++k) {
      EXPECT_EQ(got.top[k].id, order[k]) << "rank " << k;
      EXPECT_TRUE(close(got.top[k].logprob, want[static_cast<size_t>(order[k])])) << "rank " << k;
      EXPECT_LE(got.top[k].logprob, 0.f);
    }
  }
}

TEST(Logprobs, ALoneTokenIsCertainAndEqualLogitsShareTheMass) {
  const std::vector<float> one = {3.5f};
  EXPECT_EQ(token_logprobs(one, 0, 5).chosen.logprob, 0.f);
  EXPECT_EQ(token_logprobs(one, 0, 5).top.size(), 1u);
  const std::vector<float> flat(8, -2.f);
  const TokenLogprobs f = token_logprobs(flat, 6, 3);
  EXPECT_FLOAT_EQ(f.chosen.logprob, -std::log(8.f));
  // A tie keeps the lower ids first, as argmax does.
  ASSERT_EQ(f.top.size(), 3u);
  EXPECT_EQ(f.top[0].id, 0);
  EXPECT_EQ(f.top[2].id, 2);
  // A huge spread neither overflows nor goes above 0.
  const std::vector<float> spread = {1e30f, -1e30f, 0.f};
  const TokenLogprobs s = token_logprobs(spread, 1, 2);
  EXPECT_EQ(s.top[0].logprob, 0.f);
  EXPECT_EQ(s.chosen.logprob, -2e30f);
}

TEST(Logprobs, RefusesATokenOutsideTheRowOrTooManyAlternatives) {
  const std::vector<float> row = {0.f, 1.f};
  EXPECT_THROW(token_logprobs(row, 2, 0), Error);
  EXPECT_THROW(token_logprobs(row, -1, 0), Error);
  EXPECT_THROW(token_logprobs(row, 0, kMaxTopLogprobs + 1), Error);
  EXPECT_THROW(token_logprobs(row, 0, -1), Error);
}

}  // namespace
}  // namespace lg::runtime
