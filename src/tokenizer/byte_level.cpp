#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace lg::tokenizer::byte_level {
namespace {

bool stands_for_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_char{};
  // Every alphabet code point is below U+0144 (256 + 68), so a dense inverse table is enough.
  std::array<int, 0x144> to_byte{};
  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      to_char[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(unsigned char b) { return tables().to_char[b]; }

std::optional<unsigned char> char_to_byte(char32_t c) {
  const auto& t = tables();
  if (c >= t.to_byte.size() || t.to_byte[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(t.to_byte[c]);
}

std::optional<std::string> to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const auto b = char_to_byte(utf8::next_code_point(token, i));
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

std::string from_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) utf8::append_code_point(byte_to_char(static_cast<unsigned char>(c)), out);
  return out;
}

std::string decode_token(std::string_view token) {
  auto bytes = to_bytes(token);
  return bytes ? std::move(*bytes) : std::string(token);
}

}  // namespace lg::tokenizer::byte_level
