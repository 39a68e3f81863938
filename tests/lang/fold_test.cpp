// Compile-time arithmetic at its edges: integer powers as Python computes them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lang/lower.h"
#include "lang_test_paths.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::load_json;

const nlohmann::json& config() {
  static const nlohmann::json c = load_json(kShared + "/fixtures/tiny-qwen3/config.json");
  return c;
}

/// A model of `decls` whose forward maps `x: f32[T, 8]` and `t: i32[T]` to `ret` of type `type`.
std::string program(const std::string& decls, const std::string& type, const std::string& ret) {
  return "model m {\n" + decls + "  forward(x: f32[T, 8], t: i32[T]) -> " + type + " {\n    return " + ret +
         "\n  }\n}\n";
}

// (-1) ** 3 folded to 1: the loop stopped early once the product was 1, which for -1 it is after
// any even number of factors.
TEST(Fold, IntegerPowersAreAsPython) {
  const char* holds[] = {"(-1) ** 3 == -1", "(-1) ** 4 == 1", "(-1) ** 0 == 1", "(-1) ** 9223372036854775807 == -1",
                         "(-1) ** 9223372036854775806 == 1", "1 ** 9223372036854775807 == 1", "0 ** 0 == 1",
                         "0 ** 9223372036854775807 == 0", "(-2) ** 3 == -8", "(-2) ** 63 == -9223372036854775807 - 1",
                         "2 ** 62 == 4611686018427387904", "3 ** 4 == 81", "2 ** -1 == 0.5"};
  for (const char* cond : holds) {
    SCOPED_TRACE(cond);
    const auto out =
        lg::lang::check_source("m.lg", program(std::string("  require ") + cond + ", \"no\"\n", "i32[T]", "t"), config(), {});
    EXPECT_TRUE(out.ok) << out.rendered;
  }
  const auto over = lg::lang::check_source("m.lg", program("  const c = 2 ** 63\n", "i32[T]", "t"), config(), {});
  ASSERT_FALSE(over.ok);
  EXPECT_EQ(over.diagnostics.at(0).message, "integer overflow");
  // A dim of (-1) ** 3 is -1, refused as a dim (it was 1).
  const auto dim = lg::lang::check_source("m.lg", program("  dims { Z = (-1) ** 3 }\n", "i32[T]", "t"), config(), {});
  ASSERT_FALSE(dim.ok);
  EXPECT_EQ(dim.diagnostics.at(0).message, "dim 'Z' must be a positive integer of at most 2^40, found int -1");
}

}  // namespace
