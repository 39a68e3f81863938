// The regexes of tokenizer.json (Split pre-tokenizer patterns, Replace patterns): Oniguruma
// patterns in HF tokenizers, run here on PCRE2 in UTF + UCP mode, JIT-compiled. Qwen's and Llama
// 3's split patterns use Unicode classes (\p{L}, \p{N}, \s) and a lookahead.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lg::tokenizer {

/// `pattern` (an Oniguruma pattern from tokenizer.json) rewritten so that PCRE2 matches what
/// Oniguruma with Unicode 15 matches: \s/\S become explicit White_Space classes, \p{L}/\p{N} gain
/// the letters/numbers newer than PCRE2's Unicode tables. Throws lg::Error naming `where` for
/// \S inside a class.
std::string onig_compatible_pattern(const std::string& pattern, const std::string& where);

/// One match of a pattern, or one run of text between matches: [start, end) in bytes.
struct PatternMatch {
  size_t start;
  size_t end;
  bool is_match;
};

/// A compiled pattern. Thread-safe: match state lives in per-thread scratch.
class SplitRegex {
 public:
  /// Compiles `pattern`; throws lg::Error naming `where` (e.g. "tokenizer.json:
  /// pre_tokenizer.pretokenizers[0].pattern.Regex") and PCRE2's message and offset.
  SplitRegex(const std::string& pattern, const std::string& where);
  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  /// Appends to `out` the matches of the pattern in `text` (valid UTF-8) and the runs between
  /// them, in order, covering `text` exactly, as HF's `Pattern::find_matches` over Oniguruma's
  /// find_iter: matches are leftmost and non-overlapping; an empty match is kept (it marks a
  /// boundary) unless it ends where the previous match ended, and the search then steps over one
  /// character. Empty `text` gives nothing. Throws lg::Error if the regex engine gives up (match
  /// or stack limit), which only pathological inputs of megabytes can cause.
  void find_matches(std::string_view text, std::vector<PatternMatch>& out) const;
  /// The same, handing each match to `sink` as it is found (no array of a whole text's matches).
  void find_matches(std::string_view text, const std::function<void(const PatternMatch&)>& sink) const;

  /// The non-empty pieces of find_matches as views into `text` (the "Isolated" split).
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace lg::tokenizer
