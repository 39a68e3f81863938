// count_noun: the noun agrees with its count.
#include <gtest/gtest.h>

#include "support/count_noun.h"

namespace {

TEST(CountNoun, OneIsSingularEveryOtherCountPlural) {
  EXPECT_EQ(lg::count_noun(1, "token"), "1 token");
  EXPECT_EQ(lg::count_noun(0, "token"), "0 tokens");
  EXPECT_EQ(lg::count_noun(2, "token"), "2 tokens");
  EXPECT_EQ(lg::count_noun(1, "near-tie step"), "1 near-tie step");
  EXPECT_EQ(lg::count_noun(1, "GEMM launch", "GEMM launches"), "1 GEMM launch");
  EXPECT_EQ(lg::count_noun(3, "GEMM launch", "GEMM launches"), "3 GEMM launches");
}

}  // namespace
