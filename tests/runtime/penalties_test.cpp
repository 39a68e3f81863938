// The penalties (runtime/penalties.h) against a direct computation of vLLM's definition on fresh
// random logits and histories: vLLM's tensors written out per vocabulary entry (a prompt mask, the
// output's counts and mask over all V ids, then the three f32 updates of every logit in vLLM's
// order). The math is the same f32 operations, so the logits must be equal exactly.
#include <gtest/gtest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/draw.h"
#include "runtime/penalties.h"
#include "runtime/sampler.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

/// vLLM's apply_penalties on one row, as its torch ops compute it over the whole vocabulary.
std::vector<float> reference(std::vector<float> logits, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& output, double rep, double presence, double frequency) {
  const size_t V = logits.size();
  std::vector<bool> prompt_mask(V, false);
  std::vector<int64_t> counts(V, 0);
  for (int32_t t : prompt) prompt_mask[static_cast<size_t>(t)] = true;
  for (int32_t t : output) ++counts[static_cast<size_t>(t)];
  const auto r = static_cast<float>(rep), f = static_cast<float>(frequency), p = static_cast<float>(presence);
  for (size_t v = 0; v < V; ++v) {
    const bool output_mask = counts[v] > 0;
    // torch.where(prompt_mask | output_mask, penalty, 1.0), then logit > 0 ? / : *
    const float penalty = prompt_mask[v] || output_mask ? r : 1.0f;
    logits[v] = logits[v] > 0 ? logits[v] / penalty : logits[v] * penalty;
    logits[v] -= f * static_cast<float>(counts[v]);
    logits[v] -= p * static_cast<float>(output_mask ? 1 : 0);
  }
  return logits;
}

TEST(Penalties, EqualVllmsDefinitionExactlyOnRandomLogitsAndHistories) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  std::normal_distribution<float> logit(0.0f, 4.0f);
  std::uniform_real_distribution<double> penalty(-2.0, 2.0), rep(0.05, 3.0);
  int64_t changed = 0, total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto V = static_cast<size_t>(uni(1, 3000));
    std::vector<float> logits(V);
    for (float& l : logits) l = uni(0, 20) == 0 ? 0.0f : logit(rng);  // zeros too: neither > 0 nor < 0
    // Histories drawn from a few ids, so ids repeat within and across prompt and output.
    const int32_t pool = static_cast<int32_t>(uni(1, static_cast<int64_t>(V)));
    std::vector<int32_t> prompt(static_cast<size_t>(uni(0, 200))), output(static_cast<size_t>(uni(0, 200)));
    for (int32_t& t : prompt) t = static_cast<int32_t>(uni(0, pool - 1));
    for (int32_t& t : output) t = static_cast<int32_t>(uni(0, pool - 1));
    Penalties p;
    if (uni(0, 3) > 0) p.repetition = uni(0, 1) ? rep(rng) : 1.0 / rep(rng);
    if (uni(0, 3) > 0) p.presence = penalty(rng);
    if (uni(0, 3) > 0) p.frequency = penalty(rng);
    const std::vector<float> want = reference(logits, prompt, output, p.repetition, p.presence, p.frequency);
    std::vector<float> got = logits;
    apply_penalties(got, prompt, output, p);
    ASSERT_EQ(got.size(), want.size());
    for (size_t v = 0; v < V; ++v) {
      ASSERT_EQ(got[v], want[v]) << "trial " << trial << ", id " << v << " of " << V << ", logit " << logits[v];
      changed += got[v] != logits[v];
    }
    total += static_cast<int64_t>(V);
  }
  EXPECT_GT(changed, total / 100);  // the penalties really moved logits
}

// One PenaltyHistory over a sequence's steps (its output growing a token at a time, as the
// scheduler calls it) gives at every step exactly the logits of the reference over the whole
// history; then another sequence's history through the same object (read afresh) too.
TEST(Penalties, AHistoryKeptAcrossStepsEqualsTheDefinitionAtEveryStep) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  std::normal_distribution<float> logit(0.0f, 4.0f);
  PenaltyHistory history;
  for (int seq = 0; seq < 20; ++seq) {
    const auto V = static_cast<size_t>(uni(2, 500));
    const auto pool = static_cast<int32_t>(uni(1, static_cast<int64_t>(V)));
    std::vector<int32_t> prompt(static_cast<size_t>(uni(0, 50))), output;
    for (int32_t& t : prompt) t = static_cast<int32_t>(uni(0, pool - 1));
    const Penalties p{1.0 + 0.5 * static_cast<double>(uni(0, 2)), 0.25 * static_cast<double>(uni(-4, 4)),
                      0.25 * static_cast<double>(uni(-4, 4))};
    for (int step = 0; step < 60; ++step) {
      std::vector<float> logits(V);
      for (float& l : logits) l = logit(rng);
      std::vector<float> got = logits;
      history.apply(got, prompt, output, p);
      ASSERT_EQ(got, reference(logits, prompt, output, p.repetition, p.presence, p.frequency))
          << "sequence " << seq << ", step " << step;
      output.push_back(static_cast<int32_t>(uni(0, pool - 1)));
    }
  }
}

TEST(Penalties, WorkedExample) {
  // Ids 1 and 2 in the prompt, 2 twice and 3 once in the output; 0 never seen.
  std::vector<float> l = {1.0f, 2.0f, -2.0f, 3.0f};
  const std::vector<int32_t> prompt = {1, 2, 1}, output = {2, 3, 2};
  apply_penalties(l, prompt, output, {2.0, 0.5, 0.25});
  EXPECT_EQ(l[0], 1.0f);                     // unseen
  EXPECT_EQ(l[1], 1.0f);                     // 2 / 2, prompt only: no presence or frequency
  EXPECT_EQ(l[2], -4.0f - 0.5f - 0.5f);      // -2 * 2, then 0.25 * 2, then 0.5
  EXPECT_EQ(l[3], 1.5f - 0.25f - 0.5f);      // 3 / 2, then 0.25 * 1, then 0.5
  std::vector<float> off = {1.0f, -1.0f};
  apply_penalties(off, std::vector<int32_t>{0, 1}, std::vector<int32_t>{1}, {});
  EXPECT_EQ(off, (std::vector<float>{1.0f, -1.0f}));
}

TEST(Penalties, RangesAreVllmsAndTheErrorNamesTheField) {
  auto message = [](const Penalties& p) {
    try {
      check_penalties(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message({1e-9, -2, 2}), "");
  EXPECT_EQ(message({100, 2, -2}), "");
  EXPECT_NE(message({0, 0, 0}).find("repetition_penalty must be > 0"), std::string::npos);
  EXPECT_NE(message({-1, 0, 0}).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(message({std::nan(""), 0, 0}).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(message({1, 2.5, 0}).find("presence_penalty must be in [-2, 2]"), std::string::npos);
  EXPECT_NE(message({1, 0, -2.01}).find("frequency_penalty must be in [-2, 2]"), std::string::npos);
  // The Sampler checks them (and min_p) when it is made.
  SamplingOptions o;
  o.penalties.presence = 3;
  EXPECT_THROW(Sampler{o}, Error);
  o.penalties.presence = 0;
  o.min_p = 1.5;
  try {
    Sampler s(o);
    ADD_FAILURE() << "min_p 1.5 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("min_p must be in [0, 1]"), std::string::npos) << e.what();
  }
}

TEST(Penalties, AnIdOutsideTheLogitsIsAnError) {
  std::vector<float> l(10, 0.5f);
  EXPECT_THROW(apply_penalties(l, std::vector<int32_t>{10}, {}, {1.5, 0, 0}), Error);
  EXPECT_THROW(apply_penalties(l, {}, std::vector<int32_t>{-1}, {1, 0.5, 0}), Error);
}

// Greedy with a penalty picks the argmax of the penalised logits, and so needs the logits row;
// greedy without one does not (the lane's argmax is the token: the fast path).
TEST(Penalties, GreedyPicksTheArgmaxOfThePenalisedLogits) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  EXPECT_FALSE(Sampler(SamplingOptions{}).needs_logits());
  EXPECT_TRUE(Sampler(SamplingOptions{0.7}).needs_logits());
  int64_t moved = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> l(500);
    for (float& x : l) x = logit(rng);
    std::vector<int32_t> prompt(30), output(20);
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % 40);
    for (int32_t& t : output) t = static_cast<int32_t>(rng() % 40);
    // The history holds the unpenalised argmax: it is the token a penalty pushes away.
    output.back() = argmax(l);
    SamplingOptions o;
    o.penalties = {1.0 + static_cast<double>(rng() % 100) / 50, static_cast<double>(rng() % 5) / 4, 0.1};
    Sampler s(o);
    ASSERT_TRUE(s.needs_logits());
    const int32_t got = s.pick(l, prompt, output);
    EXPECT_EQ(got, argmax(reference(l, prompt, output, o.penalties.repetition, o.penalties.presence,
                                    o.penalties.frequency)));
    moved += got != argmax(l);
  }
  EXPECT_GT(moved, 20);
}

// The edits a lane applies (PenaltyHistory::edits): every distinct id of prompt and output, once,
// with its count in the output; applied one at a time they give the floats of the definition.
TEST(Penalties, EditsHoldEachSeenIdOnceWithItsOutputCount) {
  PenaltyHistory h;
  const Penalties all{1.2, 0.5, 0.5}, no_repetition{1, 0.5, 0.5};
  const std::vector<int32_t> prompt = {5, 3, 5, 9}, output = {3, 7, 7, 7, 5};
  std::map<int32_t, int32_t> got;
  for (const LogitEdit& e : h.edits(prompt, output, all)) EXPECT_TRUE(got.emplace(e.id, e.count).second) << "id " << e.id;
  EXPECT_EQ(got, (std::map<int32_t, int32_t>{{3, 1}, {5, 1}, {7, 3}, {9, 0}}));
  // One more generated token extends the counts without reading the history again.
  const std::vector<int32_t> longer = {3, 7, 7, 7, 5, 9};
  got.clear();
  for (const LogitEdit& e : h.edits(prompt, longer, all)) got[e.id] = e.count;
  EXPECT_EQ(got, (std::map<int32_t, int32_t>{{3, 1}, {5, 1}, {7, 3}, {9, 1}}));
  // Without a repetition penalty the prompt's ids change nothing: only the output's are edits.
  PenaltyHistory o;
  got.clear();
  for (const LogitEdit& e : o.edits(prompt, output, no_repetition)) got[e.id] = e.count;
  EXPECT_EQ(got, (std::map<int32_t, int32_t>{{3, 1}, {5, 1}, {7, 3}}));
  // A negative id is refused, and the history is read afresh next time (not half built).
  // (The same history as before the refusal would otherwise pass for one it extends.)
  EXPECT_THROW(h.edits(std::vector<int32_t>{2, -4}, {}, all), Error);
  got.clear();
  for (const LogitEdit& e : h.edits(prompt, longer, all)) got[e.id] = e.count;
  EXPECT_EQ(got, (std::map<int32_t, int32_t>{{3, 1}, {5, 1}, {7, 3}, {9, 1}}));
}

// A lane's pick (SeqStep::draw with the sampler's edits, runtime::draw_token's lane form) is the
// host's pick (Sampler::pick), greedy and sampled, on fresh random rows and histories: the same
// sampler state, so the same uniforms.
TEST(Penalties, TheLanesPenalisedPickEqualsTheHostsPick) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  int64_t moved = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<float> l(300);
    for (float& x : l) x = trial % 5 == 0 ? std::round(logit(rng)) : logit(rng);  // ties every fifth row
    std::vector<int32_t> prompt(1 + rng() % 40), output(rng() % 30);
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % 60);
    for (int32_t& t : output) t = static_cast<int32_t>(rng() % 60);
    SamplingOptions o;
    o.temperature = std::array<double, 3>{0, 0.7, 1.3}[trial % 3];
    o.top_k = trial % 4 == 0 ? 20 : 0;
    o.seed = rng();
    o.penalties = {0.5 + static_cast<double>(rng() % 100) / 40, static_cast<double>(rng() % 9) / 2 - 2,
                   static_cast<double>(rng() % 9) / 2 - 2};
    SamplingOptions plain_options = o;
    plain_options.penalties = {};
    Sampler host(o), lane(o), plain(plain_options);  // plain: the same uniforms, no penalties
    ASSERT_TRUE(lane.lane_draws());
    for (int pick = 0; pick < 3; ++pick) {
      const int32_t want = host.pick(l, prompt, output);
      const DrawParams d = lane.next_draw();
      const int32_t got = draw_token(l, d, lane.penalty(), lane.logit_edits(prompt, output));
      ASSERT_EQ(got, want) << "trial " << trial << ", pick " << pick << ", temperature " << o.temperature;
      moved += got != plain.pick(l);
      output.push_back(got);
    }
  }
  EXPECT_GT(moved, 100);  // of 900 picks: the penalties, not the uniforms, moved them
}

// Penalties that push a finite logit past f32's range hold it at +-FLT_MAX (vLLM's torch makes it
// +-inf), so the row stays finite and a pick is defined; a non-finite logit stays as it was, for
// the caller to report; a repetition penalty past f32's range is held at FLT_MAX (0 x inf is NaN).
TEST(Penalties, AFiniteLogitStaysFiniteANonFiniteOneStaysAsItIs) {
  const PenaltyParams tiny = penalty_params({1e-300, 0, 0}), huge = penalty_params({1e300, 0, 0});
  EXPECT_EQ(tiny.repetition, FLT_TRUE_MIN);
  EXPECT_EQ(huge.repetition, FLT_MAX);
  EXPECT_EQ(draw::edited(2.0f, tiny, {0, 0}), FLT_MAX);
  EXPECT_EQ(draw::edited(-2.0f, huge, {0, 0}), -FLT_MAX);
  EXPECT_EQ(draw::edited(0.0f, huge, {0, 0}), 0.0f);
  EXPECT_EQ(draw::edited(-FLT_MAX, penalty_params({1, 2, 2}), {0, 3}), -FLT_MAX);
  EXPECT_EQ(draw::edited(INFINITY, tiny, {0, 1}), INFINITY);
  EXPECT_TRUE(std::isnan(draw::edited(NAN, huge, {0, 1})));
  // The host's pick over such a row: the lowest id of the tie at FLT_MAX.
  std::vector<float> l = {1.0f, 3.0f, 2.0f, -1.0f};
  SamplingOptions o;
  o.penalties.repetition = 1e-300;
  Sampler s(o);
  EXPECT_EQ(s.pick(l, std::vector<int32_t>{2, 1}, {}), 1);
  // A row with a NaN: the lane form reports it as a device draw does (-1).
  l[3] = NAN;
  Sampler lane(o);
  EXPECT_EQ(draw_token(l, lane.next_draw(), lane.penalty(), lane.logit_edits(std::vector<int32_t>{0}, {})), -1);
}

}  // namespace
}  // namespace lg::runtime
