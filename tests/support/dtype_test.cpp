#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/dtype.h"

namespace lg {

TEST(DType, Bf16RoundTripIsExactForBf16Values) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<uint16_t>(rng());
    if (((v >> 7) & 0xff) == 0xff) continue;  // inf/nan
    EXPECT_EQ(f32_to_bf16(bf16_to_f32(v)), v);
  }
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTripIsExactForF16Values) {
  for (uint32_t v = 0; v < 0x10000; ++v) {
    if (((v >> 10) & 0x1f) == 0x1f) continue;  // inf/nan
    EXPECT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(v))), v) << v;
  }
}

TEST(DType, NamesParseBack) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("f64").has_value());
}

}  // namespace lg
