// did_you_mean: a suggestion where a name is a typo of one that exists, none where it is another
// word, and bounded work for any name.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/did_you_mean.h"

namespace {

TEST(DidYouMean, TyposOfAnExistingNameAreSuggested) {
  const std::vector<std::string> names = {"rms_norm", "hidden_size", "view", "wq", "eps"};
  EXPECT_EQ(lg::did_you_mean("rms_nrom", names), "; did you mean 'rms_norm'?");  // a swap counts one edit
  EXPECT_EQ(lg::did_you_mean("veiw", names), "; did you mean 'view'?");
  EXPECT_EQ(lg::did_you_mean("hiden_size", names), "; did you mean 'hidden_size'?");
  EXPECT_EQ(lg::did_you_mean("wqq", names), "; did you mean 'wq'?");
}

TEST(DidYouMean, OtherWordsShortNamesAndExactNamesGetNone) {
  EXPECT_EQ(lg::did_you_mean("bos_token_id", {"eos_token_id"}), "");  // another first letter: another word
  EXPECT_EQ(lg::did_you_mean("sliding_window", {"use_sliding_window"}), "");
  EXPECT_EQ(lg::did_you_mean("epsilon", {"eps"}), "");                  // four edits of seven letters
  EXPECT_EQ(lg::did_you_mean("wk", {"wq", "wv"}), "");                  // two letters: a name of its own
  EXPECT_EQ(lg::did_you_mean("view", {"view"}), "");
  EXPECT_EQ(lg::did_you_mean("view", {}), "");
}

TEST(DidYouMean, TiesGoToTheFirstInSortedOrder) {
  EXPECT_EQ(lg::did_you_mean("wqx", {"wqz", "wqy"}), "; did you mean 'wqy'?");
}

// Names of any length cost bounded work: two 300 KB names one edit apart would have needed a
// matrix of their lengths' product (720 GB).
TEST(DidYouMean, LongNamesGetNoSuggestionAndCostLittle) {
  const std::string a(300000, 'a');
  std::string b = a;
  b.back() = 'b';
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(lg::did_you_mean(a, {b}), "");
  EXPECT_EQ(lg::did_you_mean("abcdef", {a, b}), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  const std::string at_cap(lg::kMaxSuggested, 'x');
  EXPECT_EQ(lg::did_you_mean(at_cap + "", {at_cap.substr(1) + "y"}), "; did you mean '" + at_cap.substr(1) + "y'?");
}

// Levenshtein's: a swap of two letters is two edits here (the missing-tensor lists rank by it).
TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(lg::edit_distance("", ""), 0u);
  EXPECT_EQ(lg::edit_distance("abc", ""), 3u);
  EXPECT_EQ(lg::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(lg::edit_distance("weight", "weigth"), 2u);
}

}  // namespace
