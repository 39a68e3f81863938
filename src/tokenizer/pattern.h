// The patterns of tokenizer.json components (HF tokenizers `SplitPattern` / `ReplacePattern`):
// {"String": s} matches the literal s, {"Regex": r} an Oniguruma regex (run on PCRE2, see
// split_regex.h). Both answer HF's `Pattern::find_matches`: the matches and the runs between
// them, covering the text.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/split_regex.h"

namespace lg::tokenizer {

class JsonFields;

/// A literal or regex pattern. Copyable (a compiled regex is shared); thread-safe.
class Pattern {
 public:
  /// Reads {"String": "..."} or {"Regex": "..."} at `field` (e.g. "normalizer.pattern"). Throws
  /// lg::Error naming the file and field for another shape, an empty literal (which HF would
  /// match between every character) or a regex that does not compile.
  static Pattern from_json(const nlohmann::json& j, const JsonFields& fields, const std::string& field);

  /// A non-empty literal.
  static Pattern literal(std::string text);

  /// Appends the matches and the runs between them to `out`, in order, covering `text` exactly
  /// (nothing for empty text). Literal matches are leftmost and non-overlapping.
  void find_matches(std::string_view text, std::vector<PatternMatch>& out) const;
  /// The same, handing each match to `sink` in order.
  void find_matches(std::string_view text, const std::function<void(const PatternMatch&)>& sink) const;

  /// True for a {"String": ...} pattern; then literal_text() is it.
  bool is_literal() const { return regex_ == nullptr; }
  const std::string& literal_text() const { return literal_; }

 private:
  std::string literal_;
  std::shared_ptr<const SplitRegex> regex_;
};

}  // namespace lg::tokenizer
