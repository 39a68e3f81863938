// The byte-level alphabet of GPT-2 style BPE (`bytes_to_unicode` in GPT-2's encoder.py, HF
// ByteLevel pre-tokenizer/decoder): each of the 256 byte values is written as one printable code
// point, so vocab and merges are text. lanegraph runs BPE on raw bytes and uses this table only
// to read tokenizer.json and to write tokens back in its form.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace lg::tokenizer::byte_level {

/// The code point that stands for byte `b`: printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC,
/// U+00AE..U+00FF) stand for themselves, the other 68 take U+0100.. in byte order.
char32_t byte_to_char(unsigned char b);

/// The byte a code point stands for, or nullopt if it is not in the alphabet.
std::optional<unsigned char> char_to_byte(char32_t c);

/// A token in byte-level form -> its bytes, or nullopt if some code point is outside the
/// alphabet. `token` must be valid UTF-8.
std::optional<std::string> to_bytes(std::string_view token);

/// Bytes -> the token's byte-level form (valid UTF-8).
std::string from_bytes(std::string_view bytes);

/// What the reference ByteLevel decoder makes of one token: its bytes if every code point is in
/// the alphabet, else the token's own UTF-8 (HF tokenizers `decoders::ByteLevel::decode_chain`).
std::string decode_token(std::string_view token);

}  // namespace lg::tokenizer::byte_level
