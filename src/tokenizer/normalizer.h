// Unicode normalization of the text between added tokens (tokenizer.json "normalizer"). Qwen2/3
// use NFC (Unicode UAX #15); lanegraph computes it with utf8proc (the library Julia uses).
#pragma once

#include <string>
#include <string_view>

namespace lg::tokenizer {

/// True if NFC leaves `s` unchanged for a cheap reason: every code point is NFC_Quick_Check=Yes,
/// has combining class 0 and is never the second half of a canonical composition (below U+0300,
/// CJK ideographs, Hangul syllables, fullwidth ASCII, emoji). False means "don't know".
/// `s` must be valid UTF-8.
bool nfc_quick_yes(std::string_view s);

/// Appends NFC(s) to `out`. `s` must be valid UTF-8 (callers validate first); throws lg::Error
/// if utf8proc fails anyway (out of memory).
void append_nfc(std::string_view s, std::string& out);

/// Returns NFC(s) (convenience for tests and tools).
std::string nfc(std::string_view s);

}  // namespace lg::tokenizer
