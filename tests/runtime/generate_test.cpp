// The generation loop over a scripted lane: where it stops (eos, token limit, full cache), the
// positions it steps at, and the errors for an empty or too long prompt.
#include <gtest/gtest.h>

#include <cmath>

#include "common/per_sequence_lane.h"
#include "runtime/generate.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

/// A lane whose next token is (last token + 1) mod 50, recording every step.
class CountingLane : public lg::testing::PerSequenceLane {
 public:
  explicit CountingLane(int64_t max_seq) : PerSequenceLane(max_seq) {}
  std::string name() const override { return "counting"; }
  Provenance provenance() const override { return Reference{}; }
  SeqResult step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override {
    steps.push_back({start_pos, static_cast<int64_t>(tokens.size())});
    SeqResult r;
    r.argmax = (tokens.back() + 1) % 50;
    if (want_logits) {
      r.logits.assign(50, 0.0f);
      r.logits[static_cast<size_t>(r.argmax)] = 100.0f;  // sampling picks it too
      if (start_pos + static_cast<int64_t>(tokens.size()) - 1 == nan_at) r.logits.assign(50, std::nanf(""));
    }
    return r;
  }
  std::vector<std::pair<int64_t, int64_t>> steps;
  int64_t nan_at = -1;  ///< the step at this (last) position returns NaN logits, as NaN weights would
};

TEST(Generate, StopsAtTheTokenLimitAndStepsAtTheRightPositions) {
  CountingLane lane(100);
  GenerateOptions o;
  o.max_new_tokens = 4;
  std::vector<int32_t> seen;
  o.on_token = [&](int32_t t) { seen.push_back(t); };
  const std::vector<int32_t> prompt = {7, 8, 9};
  const Generation g = generate(lane, prompt, o);
  EXPECT_EQ(g.tokens, (std::vector<int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(seen, g.tokens);
  EXPECT_EQ(g.stats.stop, "max_tokens");
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 3}, {3, 1}, {4, 1}, {5, 1}};
  EXPECT_EQ(lane.steps, want);
  EXPECT_EQ(g.stats.prompt_tokens, 3);
  EXPECT_EQ(g.stats.decode_steps, 3);
}

TEST(Generate, StopsAtEosIncludingIt) {
  CountingLane lane(100);
  GenerateOptions o;
  o.max_new_tokens = 40;
  o.eos_ids = {99, 12};
  o.sampling.temperature = 0.8;  // the sampling path stops the same way
  const std::vector<int32_t> prompt = {9};
  const Generation g = generate(lane, prompt, o);
  EXPECT_EQ(g.tokens, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(g.stats.stop, "eos");
}

// min_tokens holds the eos ids back (their logits held under every other), and an eos id that
// still comes (every id of the vocabulary held: the lowest wins the tie of -FLT_MAX) does not end
// the sequence before min_tokens tokens, as vLLM's check_stop.
TEST(Generate, MinTokensHoldsEosBackAndNeverStopsBeforeIt) {
  CountingLane lane(100);
  GenerateOptions o;
  o.max_new_tokens = 40;
  o.eos_ids = {12};
  o.sampling.min_tokens = 5;
  o.sampling.min_tokens_held = {12};
  const std::vector<int32_t> prompt = {9};
  const Generation held = generate(lane, prompt, o);
  // 12 is held at the third token: the lane's logits put every other id at 0, so id 0 wins; the
  // count then runs on from 0 and meets 12 again well past min_tokens.
  EXPECT_EQ(held.tokens, (std::vector<int32_t>{10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(held.stats.stop, "eos");
  GenerateOptions all = o;
  all.eos_ids.clear();
  all.sampling.min_tokens = 2;
  all.sampling.min_tokens_held.clear();
  for (int32_t id = 0; id < 50; ++id) {
    all.eos_ids.push_back(id);
    all.sampling.min_tokens_held.push_back(id);
  }
  const Generation every = generate(lane, prompt, all);
  EXPECT_EQ(every.tokens, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(every.stats.stop, "eos");
}

TEST(Generate, StopsWhenTheCallerAsks) {
  CountingLane lane(100);
  GenerateOptions o;
  o.max_new_tokens = 40;
  // Asked after every token (and before every step): once the caller has seen three tokens it
  // says stop, and the third is the last.
  int seen = 0;
  o.on_token = [&](int32_t) { ++seen; };
  o.should_stop = [&] { return seen >= 3; };
  const std::vector<int32_t> prompt = {1};
  const Generation g = generate(lane, prompt, o);
  EXPECT_EQ(g.tokens, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(g.stats.stop, "caller");
  // Stopped before it starts: it never runs.
  CountingLane unused(100);
  o.should_stop = [] { return true; };
  const Generation none = generate(unused, prompt, o);
  EXPECT_TRUE(none.tokens.empty());
  EXPECT_EQ(none.stats.stop, "caller");
  EXPECT_TRUE(unused.steps.empty());
}

TEST(Generate, StopsWhenTheCacheIsFull) {
  CountingLane lane(6);
  GenerateOptions o;
  o.max_new_tokens = 100;
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  const Generation g = generate(lane, prompt, o);
  // Positions 4 and 5 are decoded; the token after position 5 is produced but has no slot.
  EXPECT_EQ(g.tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(g.stats.stop, "context");
}

TEST(Generate, RejectsEmptyAndTooLongPrompts) {
  CountingLane lane(4);
  GenerateOptions o;
  try {
    generate(lane, std::vector<int32_t>{}, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prompt is empty"), std::string::npos) << e.what();
  }
  try {
    generate(lane, std::vector<int32_t>{1, 2, 3, 4, 5}, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 tokens, more than the context of 4"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(lane.steps.empty());
}

// Sampling over NaN logits would pick an arbitrary id (the "!!!" of a broken checkpoint): the
// loop refuses them at the step that made them, prefill or decode, for any lane.
TEST(Generate, NonFiniteLogitsAreAnErrorNamingTheStep) {
  GenerateOptions o;
  o.max_new_tokens = 8;
  o.sampling.temperature = 1.0;
  for (auto [nan_at, want] : {std::pair<int64_t, std::string>{6, "lane counting: the decode step at position 6 gave "
                                                                  "non-finite logits (50 NaN and 0 Inf of 50)"},
                              {2, "lane counting: the prefill step at position 2 gave non-finite logits"}}) {
    CountingLane lane(64);
    lane.nan_at = nan_at;
    try {
      generate(lane, std::vector<int32_t>{1, 2, 3}, o);
      FAIL() << "expected an error at position " << nan_at;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("lg inspect --check"), std::string::npos) << e.what();
      // A --program of one's own can make them too (new-user pass, session 22: a zero RoPE theta
      // was blamed on the weights, which `lg inspect --check` then found finite).
      EXPECT_NE(std::string(e.what()).find("the weights or the program"), std::string::npos) << e.what();
    }
  }
  // A one-token prompt's first step is its prefill too.
  CountingLane one(64);
  one.nan_at = 0;
  try {
    generate(one, std::vector<int32_t>{1}, o);
    FAIL() << "expected an error at position 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the prefill step at position 0 gave non-finite logits"), std::string::npos)
        << e.what();
  }
  CountingLane finite(64);  // the same loop without NaN runs to the token limit
  EXPECT_EQ(generate(finite, std::vector<int32_t>{1, 2, 3}, o).tokens.size(), 8u);
}

}  // namespace
}  // namespace lg::runtime
