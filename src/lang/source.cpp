#include "lang/source.h"

#include <algorithm>

namespace lg::lang {

Span join(const Span& a, const Span& b) {
  Span s = a;
  if (b.line < s.line || (b.line == s.line && b.col < s.col)) {
    s.line = b.line;
    s.col = b.col;
  }
  if (b.end_line > s.end_line || (b.end_line == s.end_line && b.end_col > s.end_col)) {
    s.end_line = b.end_line;
    s.end_col = b.end_col;
  }
  return s;
}

size_t utf8_len(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > text.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

uint32_t utf8_code_point(std::string_view text, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[i + k])); };
  uint32_t cp = n == 2 ? b(0) & 0x1F : n == 3 ? b(0) & 0x0F : b(0) & 0x07;
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(k) & 0x3F);
  return cp;
}

bool acts_on_terminal(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0xAD || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB);
}

std::string_view SourceFile::line(int32_t n) const {
  if (n < 1 || static_cast<size_t>(n) > line_starts.size()) return {};
  size_t begin = line_starts[static_cast<size_t>(n) - 1];
  size_t end = text.find('\n', begin);
  if (end == std::string::npos) end = text.size();
  std::string_view v(text.data() + begin, end - begin);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  return v;
}

int32_t SourceManager::add(std::string name, std::string text) {
  // A CR alone ends a line, as in files saved with classic Mac line ends (Python's universal
  // newlines, clang): read as one line, such a file was one comment, "expected a `model` block".
  // Same length, so every offset stays; CRLF keeps its CR, which the lexer skips.
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) text[i] = '\n';
  SourceFile f{std::move(name), std::move(text), {0}};
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<int32_t>(files_.size() - 1);
}

}  // namespace lg::lang
