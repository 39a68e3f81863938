// UTF-8 validation and lossy decoding with the exact replacement rule of the reference decoder
// (Rust String::from_utf8_lossy, which follows Unicode's "maximal subpart" practice, Unicode
// 15 §3.9 U+FFFD substitution): each maximal prefix of a valid sequence that cannot complete
// becomes one U+FFFD. Streaming decode relies on this rule being decidable left to right.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lg::tokenizer::utf8 {

/// The encoding of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// Byte offset of the first byte that does not start a complete valid UTF-8 sequence, or
/// std::string_view::npos if `s` is valid UTF-8 as a whole.
size_t first_invalid(std::string_view s);

/// Appends `bytes` to `out` as valid UTF-8, replacing each maximal invalid subpart by U+FFFD.
/// If `hold_incomplete_tail` is set, a trailing valid-but-incomplete sequence (one that more
/// bytes could still complete) is not consumed. Returns the number of bytes consumed.
size_t append_lossy(std::string_view bytes, std::string& out, bool hold_incomplete_tail);

/// Decodes the code point at s[i] (s must be valid UTF-8 there) and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

/// Appends the UTF-8 encoding of a Unicode scalar value.
void append_code_point(char32_t c, std::string& out);

}  // namespace lg::tokenizer::utf8
