#include "lang/diagnostics.h"

#include <algorithm>
#include <string_view>

namespace lg::lang {

void Diagnostics::error(const Span& span, std::string message, std::vector<Diagnostic::Note> notes) {
  // One error a position: a second at the same place is the first one's echo (the block and the
  // model both missing their '}' at the end of the file), or the same error met again (a layer's
  // statement elaborated once a layer).
  for (const auto& d : list_)
    if (d.span.file == span.file && d.span.line == span.line && d.span.col == span.col) return;
  ++count_;
  if (list_.size() < limit_) list_.push_back({span, std::move(message), std::move(notes)});
}

namespace {

/// Columns of source shown around the fault; a longer line is cut to this window with "..." marks.
constexpr size_t kWindow = 160;

/// The source line as shown, and the caret line's padding up to byte `col`: printable ASCII,
/// tabs and valid UTF-8 as they are; other bytes as \xNN (so a binary file cannot put raw
/// control bytes on the terminal), with the padding widened to match. `col` is clamped to the
/// text; `width` (caret + tildes) is clamped to the shown part.
struct Shown {
  std::string line, pad;
  size_t width;
};

Shown show_line(std::string_view text, size_t col, size_t width) {
  col = std::min(col, text.size());
  size_t begin = 0, end = text.size();
  if (text.size() > kWindow) {
    begin = col > kWindow / 2 ? col - kWindow / 2 : 0;
    end = std::min(text.size(), begin + kWindow);
    begin = end - kWindow;
    // Do not start inside a UTF-8 sequence (it would show as escaped bytes).
    for (int k = 0; k < 3 && begin > 0 && begin < col && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80; ++k)
      ++begin;
  }
  Shown s{begin > 0 ? "..." : "", begin > 0 ? "   " : "", 0};
  const size_t last = std::min(end, col + std::max<size_t>(width, 1));  // one past the marked bytes
  for (size_t i = begin; i < end;) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::string unit;
    size_t n = 1;
    if (c == '\t' || (c >= 0x20 && c < 0x7F)) unit = std::string(1, static_cast<char>(c));
    else if ((n = utf8_len(text, i)) > 0) unit = std::string(text.substr(i, n));
    else {
      static const char* hex = "0123456789abcdef";
      unit = std::string("\\x") + hex[c >> 4] + hex[c & 15];
      n = 1;
    }
    const size_t cols = n > 1 ? 1 : unit.size();
    if (i < col) s.pad += c == '\t' ? std::string("\t") : std::string(cols, ' ');
    else if (i < last) s.width += cols;
    s.line += unit;
    i += n;
  }
  if (end < text.size()) s.line += "...";
  s.width = std::max<size_t>(s.width, 1);
  return s;
}

}  // namespace

std::string Diagnostics::render_one(const Span& span, const std::string& kind, const std::string& message) const {
  std::string out;
  if (span.file < 0 || static_cast<size_t>(span.file) >= sources_.size()) return kind + ": " + message + "\n";
  const SourceFile& f = sources_.file(span.file);
  out += f.name + ":" + std::to_string(span.line) + ":" + std::to_string(span.col) + ": " + kind + ": " + message + "\n";
  std::string_view text = f.line(span.line);
  if (text.empty() && span.line > static_cast<int32_t>(f.line_starts.size())) return out;
  const size_t col = static_cast<size_t>(std::max(1, span.col)) - 1;
  size_t width = 1;
  if (span.end_line == span.line && span.end_col > span.col) width = static_cast<size_t>(span.end_col - span.col);
  if (span.end_line > span.line) width = text.size() > col ? text.size() - col : 1;
  const Shown shown = show_line(text, col, std::min<size_t>(width, 200));
  const std::string gutter = std::to_string(span.line);
  out += " " + gutter + " | " + shown.line + "\n";
  out += " " + std::string(gutter.size(), ' ') + " | " + shown.pad + "^" + std::string(shown.width - 1, '~') + "\n";
  return out;
}

std::string Diagnostics::render() const {
  std::string out;
  for (const auto& d : list_) {
    out += render_one(d.span, "error", d.message);
    for (const auto& n : d.notes) out += render_one(n.span, "note", n.message);
  }
  if (count_ > list_.size())
    out += std::to_string(count_ - list_.size()) + " more errors not shown\n";
  out += std::to_string(count_) + (count_ == 1 ? " error\n" : " errors\n");
  return out;
}

}  // namespace lg::lang
