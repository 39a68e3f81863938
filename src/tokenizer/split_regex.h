// The Split pre-tokenizer with behavior "Isolated" (HF tokenizers `pre_tokenizers::Split`): the
// text is cut into the matches of a regex and the runs between them, each a pre-token. Qwen's
// pattern uses Unicode classes (\p{L}, \p{N}, \s) and a lookahead, so it runs on PCRE2 in UTF +
// UCP mode, JIT-compiled; HF runs the same pattern on Oniguruma.
#pragma once

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

/// A compiled split pattern. Thread-safe: match state lives in per-thread scratch.
class SplitRegex {
 public:
  /// Compiles `pattern`; throws lg::Error naming `where` (e.g. "tokenizer.json:
  /// pre_tokenizer.pretokenizers[0].pattern.Regex") and PCRE2's message and offset.
  SplitRegex(const std::string& pattern, const std::string& where);
  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  /// Appends the pre-tokens of `text` (valid UTF-8) to `out`, in order, as views into `text`;
  /// together they cover `text` exactly. Throws lg::Error if the regex engine gives up (match
  /// or stack limit), which only pathological inputs of megabytes can cause.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace lg::tokenizer
