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
  SourceFile f{std::move(name), std::move(text), {0}};
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<int32_t>(files_.size() - 1);
}

}  // namespace lg::lang
