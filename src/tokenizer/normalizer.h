// The normalizer of tokenizer.json (HF tokenizers `normalizers`): the text between added tokens
// is normalized before pre-tokenization. Supported: NFC, NFD, NFKC, NFKD (Unicode UAX #15, with
// utf8proc, the library Julia uses), Replace (String or Regex pattern -> content, as Gemma's
// " " -> "▁"), Prepend (Llama 2 / Mistral's "▁"), and a Sequence of these. Qwen2/3 use NFC.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pattern.h"

namespace lg::tokenizer {

class JsonFields;

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

/// A loaded "normalizer": an ordered list of steps (empty = none). Immutable, thread-safe.
class Normalizer {
 public:
  /// Reads tokenizer.json's "normalizer" (null = none). Throws lg::Error naming the file and the
  /// field ("normalizer.normalizers[1].type") for an unsupported or malformed normalizer.
  static Normalizer from_json(const nlohmann::json& j, const JsonFields& fields);

  /// True when there is no step.
  bool empty() const { return steps_.empty(); }

  /// Normalizes `text` (valid UTF-8): returns a view of `text` itself when no step changes it,
  /// else of `scratch` (overwritten). The result is valid UTF-8.
  std::string_view apply(std::string_view text, std::string& scratch) const;

 private:
  enum class Kind { nfc, nfd, nfkc, nfkd, replace, prepend };
  struct Step {
    Kind kind;
    Pattern pattern;      // replace
    std::string content;  // replace: the replacement; prepend: the prefix
  };
  void read(const nlohmann::json& j, const JsonFields& fields, const std::string& field);
  std::vector<Step> steps_;
};

}  // namespace lg::tokenizer
