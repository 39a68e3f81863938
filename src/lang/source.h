// Source text and positions for the .lg front end: every token, AST node and diagnostic points
// back into a file held here, so that errors can quote the line and the IR can name its origin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lg::lang {

/// A range in a source file; lines and columns are 1-based, columns count bytes, the end is
/// exclusive. Same layout as ir::Span so that lowering copies it field by field.
struct Span {
  int32_t file = -1;
  int32_t line = 0, col = 0, end_line = 0, end_col = 0;
};

/// The smallest span covering both `a` and `b` (same file assumed).
Span join(const Span& a, const Span& b);

/// Length of the valid UTF-8 sequence starting at text[i] (2..4), or 0 if there is none
/// (an ASCII byte, a stray continuation byte, an overlong or surrogate form, a cut sequence).
/// The lexer refuses a source that is not UTF-8 by it; diagnostics quote such bytes escaped.
size_t utf8_len(std::string_view text, size_t i);

/// The code point of the whole UTF-8 sequence of `n` bytes (utf8_len's) at text[i].
uint32_t utf8_code_point(std::string_view text, size_t i, size_t n);

/// Whether code point cp would act on a terminal rather than show: a C1 control (U+0080-U+009F,
/// U+009B is a CSI), or an invisible formatting character (U+00AD, U+200B-U+200F, U+202A-U+202E
/// bidirectional overrides, U+2060-U+206F, U+FEFF, U+FFF9-U+FFFB). Diagnostics name these by
/// number and show their bytes escaped.
bool acts_on_terminal(uint32_t cp);

/// One source file: its name as shown in diagnostics and its text.
struct SourceFile {
  std::string name;
  std::string text;
  std::vector<size_t> line_starts;  ///< byte offset of each line's first character
  /// The text of 1-based line `line` without its newline; empty if out of range.
  std::string_view line(int32_t line) const;
};

/// Owns the source files of one compilation (the program and the prelude).
class SourceManager {
 public:
  /// Adds a file and returns its index (the Span::file of everything lexed from it).
  int32_t add(std::string name, std::string text);
  const SourceFile& file(int32_t index) const { return files_.at(static_cast<size_t>(index)); }
  size_t size() const { return files_.size(); }

 private:
  std::vector<SourceFile> files_;
};

}  // namespace lg::lang
