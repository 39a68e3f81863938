// runtime/step.h: the limits a lane is made with, and the checks that keep a scheduler from
// running into a pool it can never fit.
#include <gtest/gtest.h>

#include <string>

#include "runtime/step.h"
#include "support/error.h"

namespace lg {
namespace {

std::string error_of(const LaneOptions& o, int64_t max_seq, int64_t default_pool) {
  try {
    resolve_limits(o, max_seq, default_pool);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LaneLimits, DefaultsAndRounding) {
  const LaneLimits l = resolve_limits({.kv_tokens = 100, .block_size = 16}, 64, 0);
  EXPECT_EQ(l.num_blocks, 7);  // 100 positions rounded up to blocks of 16
  EXPECT_EQ(l.pool_tokens(), 112);
  EXPECT_EQ(l.max_batch, 256);
  EXPECT_EQ(l.max_tokens, 256);  // min(context, 2048), but a decode token for each of 256 sequences
  EXPECT_EQ(l.blocks_per_seq(), 4);
  EXPECT_EQ(resolve_limits({}, 4096, 8192).max_tokens, 2048);
}

// A step's sequences take a token each: more sequences than tokens per step cannot run.
TEST(LaneLimits, BatchIsAtMostTheTokensOfAStep) {
  const LaneLimits l = resolve_limits({.max_batch = 64, .max_tokens = 8}, 128, 1024);
  EXPECT_EQ(l.max_batch, 8);
  EXPECT_EQ(l.max_tokens, 8);
}

// A pool smaller than one context would leave a lone sequence nothing to do but preempt itself;
// one of 2^31 blocks or more does not fit the int32 block tables. Both name the option.
TEST(LaneLimits, PoolsThatCannotWorkAreRefused) {
  const std::string small = error_of({.kv_tokens = 32}, 128, 0);
  EXPECT_NE(small.find("--kv-tokens"), std::string::npos) << small;
  EXPECT_NE(small.find("one context of 128 tokens"), std::string::npos) << small;
  // A lane's default too, named as the default (it named --kv-tokens, which was not given).
  EXPECT_NE(error_of({}, 128, 100).find("100 tokens (the default, with no --kv-tokens) holds less than one context"),
            std::string::npos);
  EXPECT_NO_THROW(resolve_limits({.kv_tokens = 128}, 128, 0));
  // A count of 1 is said in the singular (lg compile --kv-tokens 1 said "a KV cache of 1 tokens").
  EXPECT_NE(error_of({.kv_tokens = 1}, 128, 0).find("a KV cache of 1 token (--kv-tokens) holds less than one context of "
                                                    "128 tokens (--max-seq)"),
            std::string::npos);
  const std::string huge = error_of({.kv_tokens = INT64_MAX}, 128, 0);
  EXPECT_NE(huge.find("tokens (--kv-tokens) is more than 2^31 blocks"), std::string::npos) << huge;
  const std::string huge_default = error_of({}, int64_t{1} << 40, int64_t{1} << 40);
  EXPECT_NE(huge_default.find("(the default, with no --kv-tokens) is more than 2^31 blocks of 16: give a smaller --max-seq"),
            std::string::npos)
      << huge_default;
  EXPECT_NE(error_of({.kv_tokens = -1}, 128, 0).find(">= 0"), std::string::npos);
  EXPECT_NE(error_of({.block_size = 0}, 128, 256).find("block size"), std::string::npos);
}

}  // namespace
}  // namespace lg
