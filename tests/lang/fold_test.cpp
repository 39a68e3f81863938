// Compile-time arithmetic at its edges: integer powers as Python computes them, slices and aranges
// whose step is past the dim (their length computed without overflow), integer constants next to
// i32 tensors (refused outside the i32 range, as torch refuses them), and concat dims past the limit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/cpu_executor.h"
#include "ir/verify.h"
#include "lang/lower.h"
#include "lang_test_paths.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::load_json;
using lg::ir::cpu::Tensor;

const nlohmann::json& fold_config() {
  static const nlohmann::json c = load_json(kShared + "/fixtures/tiny-qwen3/config.json");
  return c;
}

/// A model of `decls` whose forward maps `x: f32[T, 8]` and `t: i32[T]` to `ret` of type `type`.
std::string fold_program(const std::string& decls, const std::string& type, const std::string& ret) {
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
        lg::lang::check_source("m.lg", fold_program(std::string("  require ") + cond + ", \"no\"\n", "i32[T]", "t"), fold_config(), {});
    EXPECT_TRUE(out.ok) << out.rendered;
  }
  const auto over = lg::lang::check_source("m.lg", fold_program("  const c = 2 ** 63\n", "i32[T]", "t"), fold_config(), {});
  ASSERT_FALSE(over.ok);
  EXPECT_EQ(over.diagnostics.at(0).message, "integer overflow");
  // A dim of (-1) ** 3 is -1, refused as a dim (it was 1).
  const auto dim = lg::lang::check_source("m.lg", fold_program("  dims { Z = (-1) ** 3 }\n", "i32[T]", "t"), fold_config(), {});
  ASSERT_FALSE(dim.ok);
  EXPECT_EQ(dim.diagnostics.at(0).message, "dim 'Z' must be a positive integer of at most 2^40, found int -1");
}

/// Checks `text`, verifies its graph and runs it on the CPU reference with x = 0, 1, ..., 23 as
/// [3, 8] and t = [5, 6, 7]; returns the result.
Tensor run(const std::string& text) {
  const auto out = lg::lang::check_source("m.lg", text, fold_config(), {});
  EXPECT_TRUE(out.ok) << out.rendered;
  if (!out.ok) return {};
  lg::ir::verify(out.report.graph);
  lg::ir::CpuExecutor ex(out.report.graph, {});
  std::vector<float> xs(24);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k);
  const std::vector<Tensor> inputs = {Tensor::from_f32({3, 8}, xs), Tensor::from_i32({3}, {5, 6, 7})};
  return ex.run(inputs).at(0);
}

// The slice length (stop - start + step - 1) / step overflowed for a step near 2^63 (in the
// checker, the verifier and the CPU slice); such a slice has one element, as in Python.
TEST(Fold, ASliceWithAStepPastTheDimHasOneElement) {
  Tensor y = run(fold_program("", "f32[T, 1]", "x[:, 0:8:9223372036854775807]"));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(y.to_f32(), (std::vector<float>{0, 8, 16}));
  y = run(fold_program("", "f32[T, 1]", "x[:, 5::9223372036854775807]"));
  EXPECT_EQ(y.to_f32(), (std::vector<float>{5, 13, 21}));
  y = run(fold_program("", "f32[T, 3]", "x[:, 1:8:3]"));
  EXPECT_EQ(y.to_f32(), (std::vector<float>{1, 4, 7, 9, 12, 15, 17, 20, 23}));
  // arange's length the same way; its one element is `start` (the step, past i32, is not used).
  y = run(fold_program("", "i32[T, 1]", "t.view(T, 1) + arange(2, 9, 9223372036854775807)"));
  EXPECT_EQ(y.to_i32(), (std::vector<int32_t>{7, 8, 9}));
}

// An integer constant outside the i32 range next to an i32 tensor was accepted and became an i32
// Const whose conversion is undefined (torch: "value cannot be converted to type int32_t without
// overflow"). Refused at its line; the range's ends are fine.
TEST(Fold, AnIntegerConstantPastI32NextToAnI32TensorIsRefused) {
  const Tensor y = run(fold_program("", "i32[T]", "t + 2147483647 - 2147483647 + (-2147483648) - (-2147483648)"));
  EXPECT_EQ(y.to_i32(), (std::vector<int32_t>{5, 6, 7}));
  for (const char* ret : {"t + 2147483648", "t * -2147483649", "maximum(t, 4294967296)", "where(t > 0, t, 9223372036854775807)"}) {
    SCOPED_TRACE(ret);
    const auto out = lg::lang::check_source("m.lg", fold_program("", "i32[T]", ret), fold_config(), {});
    ASSERT_FALSE(out.ok);
    ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
    EXPECT_EQ(out.diagnostics[0].span.line, 3) << out.rendered;
    EXPECT_NE(out.diagnostics[0].message.find("is outside the i32 range of tensor i32[T]"), std::string::npos)
        << out.rendered;
  }
  const auto cmp = lg::lang::check_source("m.lg", fold_program("", "bool[T]", "t == 4294967296"), fold_config(), {});
  ASSERT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.diagnostics.at(0).message, "integer constant 4294967296 is outside the i32 range of tensor i32[T] in '=='");
  // A float tensor takes any integer constant (torch converts it to the float dtype).
  EXPECT_TRUE(lg::lang::check_source("m.lg", fold_program("", "f32[T, 8]", "x + 4294967296"), fold_config(), {}).ok);
}

// concat added its operands' dims unchecked: past the 2^40 limit every other dim has (and, doubled
// often enough, past int64). Refused at its line.
TEST(Fold, AConcatPastTheDimLimitIsRefused) {
  const auto out = lg::lang::check_source(
      "m.lg",
      fold_program("  param big: f32[1099511627776] = \"big\"\n", "f32[T, 8]",
              "x + concat(big, big, axis=0)[0]"),
      fold_config(), {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, 4);
  EXPECT_EQ(out.diagnostics[0].message,
            "concat along axis 0 of [1099511627776] and [1099511627776]: the joined dim is more than 2^40");
  // The runtime dim's multiple too.
  std::string body;
  for (int k = 0; k < 41; ++k) body += "    x = concat(x, x, axis=0)\n";
  const auto runtime = lg::lang::check_source(
      "m.lg", "model m {\n  forward(x: f32[T, 8]) -> f32[T, 8] {\n" + body + "    return x\n  }\n}\n", fold_config(), {});
  ASSERT_FALSE(runtime.ok);
  EXPECT_EQ(runtime.diagnostics.at(0).span.line, 43);
  EXPECT_EQ(runtime.diagnostics.at(0).message,
            "concat along axis 0 of [1099511627776*T, 8] and [1099511627776*T, 8]: the joined dim is more than 2^40");
}

}  // namespace
