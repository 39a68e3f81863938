// The GPU lanes' launch-skip switch (lanes/launch_skip.h, LG_COMPILED_SKIP and LG_QWEN_SKIP):
// unset or empty reads as none, a pattern matches launch names, and a malformed one is an error
// naming the variable rather than an uncaught std::regex_error.
#include "lanes/launch_skip.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

TEST(LaunchSkip, UnsetOrEmptyIsNoneAPatternMatchesAMalformedOneNamesTheVariable) {
  const char* var = "LG_TEST_LAUNCH_SKIP";
  unsetenv(var);
  EXPECT_FALSE(lg::launch_skip_from_env(var, "test steps"));
  setenv(var, "", 1);
  EXPECT_FALSE(lg::launch_skip_from_env(var, "test steps"));
  setenv(var, "^k(16_topk|27_reduce)$", 1);
  const auto re = lg::launch_skip_from_env(var, "test steps");
  ASSERT_TRUE(re);
  EXPECT_TRUE(std::regex_search("k16_topk", *re));
  EXPECT_FALSE(std::regex_search("k17_experts", *re));
  setenv(var, "(", 1);
  try {
    lg::launch_skip_from_env(var, "test steps");
    ADD_FAILURE() << "a malformed pattern was accepted";
  } catch (const lg::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("LG_TEST_LAUNCH_SKIP: not a regular expression", 0), 0u) << e.what();
  }
  unsetenv(var);
}

}  // namespace
