// StopMatcher: streamed in any split, the emitted text equals the whole text cut before the
// first stop string, and nothing past a stop is ever emitted.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "server/stop_strings.h"

namespace {

using lg::server::StopMatcher;

// The reference, by brute force over every prefix: the text before the stop occurrence that
// ends earliest (on a tie the one that starts earliest).
// A stop must end past the first `unmatched` bytes (min_tokens' text).
std::string cut_whole(const std::string& text, const std::vector<std::string>& stops, bool* stopped,
                      size_t unmatched = 0) {
  for (size_t end = unmatched + 1; end <= text.size(); ++end) {
    size_t best = std::string::npos;
    for (const auto& s : stops)
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0) best = std::min(best, end - s.size());
    if (best != std::string::npos) {
      *stopped = true;
      return text.substr(0, best);
    }
  }
  *stopped = false;
  return text;
}

// Pushed in random pieces, the first `unmatched` bytes with match false (a piece never straddles
// that boundary: a token's text is matched or not).
std::string run_split(const std::string& text, const std::vector<std::string>& stops, std::mt19937& rng, bool* stopped,
                      size_t unmatched = 0) {
  StopMatcher m(stops);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 4)(rng);
    if (i < unmatched) n = std::min(n, unmatched - i);
    out += m.push(text.substr(i, n), i >= unmatched);
    i += n;
  }
  out += m.finish();
  *stopped = m.stopped();
  return out;
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.finish(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackAPossibleStartAndReleasesIt) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.push("ab\n"), "ab");  // "\n" may begin "\n\n"
  EXPECT_EQ(m.push("c"), "\nc");
  EXPECT_EQ(m.push("\n"), "");
  EXPECT_EQ(m.finish(), "\n");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopSplitAcrossPiecesCutsBeforeIt) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("xyE"), "xy");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("Dzz"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcher, TheStopThatCompletesFirstWins) {
  // "a\n\n" starts earlier but "\n" is complete first: a stream cannot wait for the longer one.
  StopMatcher m({"a\n\n", "\n"});
  EXPECT_EQ(m.push("xa\n\n"), "xa");
  EXPECT_TRUE(m.stopped());
  StopMatcher tie({"b", "ab"});  // both end at the same byte: the longer, earlier one cuts
  EXPECT_EQ(tie.push("xab"), "x");
}

// vLLM's min_tokens: a stop inside the first tokens' text does not stop the request; one that
// starts in it and ends later does (vllm/v1/engine/detokenizer.py checks only stops ending in new
// text, and the first min_tokens tokens' text is never new).
TEST(StopMatcher, TextPushedWithoutMatchingNeverStopsButAStopMayStartInIt) {
  StopMatcher m({"ab"});
  EXPECT_EQ(m.push("xab", false), "xab");
  EXPECT_EQ(m.push("a", false), "");  // may begin "ab"
  EXPECT_EQ(m.push("b"), "");
  EXPECT_TRUE(m.stopped());
  StopMatcher n({"ab"});
  EXPECT_EQ(n.push("ab", false), "ab");
  EXPECT_EQ(n.push("cab"), "c");
  EXPECT_TRUE(n.stopped());
}

TEST(StopMatcher, RandomSplitsMatchTheWholeTextCut) {
  std::mt19937 rng(std::random_device{}());
  const std::string alphabet = "ab\n";
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const int len = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int i = 0; i < len; ++i) text += alphabet[std::uniform_int_distribution<size_t>(0, 2)(rng)];
    std::vector<std::string> stops;
    const int nstops = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int s = 0; s < nstops; ++s) {
      std::string stop;
      const int slen = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int i = 0; i < slen; ++i) stop += alphabet[std::uniform_int_distribution<size_t>(0, 2)(rng)];
      stops.push_back(stop);
    }
    bool want_stopped = false, got_stopped = false;
    const std::string want = cut_whole(text, stops, &want_stopped);
    EXPECT_EQ(run_split(text, stops, rng, &got_stopped), want) << "text '" << text << "'";
    EXPECT_EQ(got_stopped, want_stopped);
    const auto unmatched = std::uniform_int_distribution<size_t>(0, text.size())(rng);
    const std::string want_late = cut_whole(text, stops, &want_stopped, unmatched);
    EXPECT_EQ(run_split(text, stops, rng, &got_stopped, unmatched), want_late)
        << "text '" << text << "', the first " << unmatched << " bytes unmatched";
    EXPECT_EQ(got_stopped, want_stopped);
  }
}

}  // namespace
