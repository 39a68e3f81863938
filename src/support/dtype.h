// Element types shared by the language, the checkpoint reader, the IR and the lanes, and the
// conversions between the 16-bit float formats and fp32 (the CPU reference computes in fp32).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace lg {

/// Element type of a tensor. bf16/f16/f32/i32/bool are the language's dtypes; i64 and u8 also
/// occur in checkpoints (safetensors "I64", "U8").
enum class DType : uint8_t { BF16, F16, F32, I32, I64, U8, Bool };

/// Size of one element in bytes (Bool is stored as one byte).
size_t dtype_size(DType t);
/// The language's spelling: "bf16", "f16", "f32", "i32", "i64", "u8", "bool".
std::string_view dtype_name(DType t);
/// Parses the language's spelling; nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view name);
inline bool is_float(DType t) { return t == DType::BF16 || t == DType::F16 || t == DType::F32; }

/// bf16 -> fp32 is exact: bf16 is the top half of an fp32.
inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// fp32 -> bf16 with round-to-nearest-even (as torch does); NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// IEEE half -> fp32 (exact, subnormals included).
float f16_to_f32(uint16_t v);
/// fp32 -> IEEE half, round-to-nearest-even, overflow to inf.
uint16_t f32_to_f16(float f);

}  // namespace lg
