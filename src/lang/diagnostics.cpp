#include "lang/diagnostics.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

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
/// tabs and valid UTF-8 as they are; other bytes, and the UTF-8 of characters that act on a
/// terminal (acts_on_terminal), as \xNN, with the padding widened to match. At most kWindow
/// columns are shown around `col`, counted as printed (an escaped byte takes four, a character
/// one), "..." where the line was cut; `col` is clamped to the text; `width` (caret + tildes) is
/// clamped to the shown part.
struct Shown {
  std::string line, pad;
  size_t width;
};

Shown show_line(std::string_view text, size_t col, size_t width) {
  col = std::min(col, text.size());
  struct Unit {
    size_t at, n, cols;  // first byte, bytes, columns printed
    std::string text;
  };
  // The characters within 4 kWindow bytes of col (a character is at most 4 bytes, and takes at
  // least one column): enough for any window of kWindow columns, and bounded work on a minified
  // line of megabytes.
  constexpr size_t kReach = 4 * kWindow;
  size_t from = col > kReach ? col - kReach : 0;
  // Do not start inside a UTF-8 sequence (it would show as escaped bytes).
  for (int k = 0; k < 3 && from > 0 && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80; ++k) --from;
  const size_t to = std::min(text.size(), col + kReach + 1);
  std::vector<Unit> units;
  size_t at_col = 0;  // the unit holding col (units.size() when col is the end of the text)
  for (size_t i = from; i < to;) {
    const auto c = static_cast<unsigned char>(text[i]);
    Unit u{i, 1, 1, {}};
    if (c == '\t' || (c >= 0x20 && c < 0x7F)) {
      u.text = std::string(1, static_cast<char>(c));
    } else if (const size_t n = utf8_len(text, i); n > 0 && !acts_on_terminal(utf8_code_point(text, i, n))) {
      u.n = n;
      u.text = std::string(text.substr(i, n));
    } else {
      static const char* hex = "0123456789abcdef";
      u.text = std::string("\\x") + hex[c >> 4] + hex[c & 15];
      u.cols = 4;
    }
    if (i <= col) at_col = units.size() + (i + u.n <= col ? 1 : 0);
    units.push_back(std::move(u));
    i += units.back().n;
  }
  // Grow the shown span from the caret's unit, half the window before it, the rest after.
  size_t lo = std::min(at_col, units.size()), hi = lo, cols = 0;
  while (lo > 0 && cols + units[lo - 1].cols <= kWindow / 2) cols += units[--lo].cols;
  while (hi < units.size() && cols + units[hi].cols <= kWindow) cols += units[hi++].cols;
  while (lo > 0 && cols + units[lo - 1].cols <= kWindow) cols += units[--lo].cols;
  const size_t first = lo < units.size() ? units[lo].at : to, stop = hi < units.size() ? units[hi].at : to;
  Shown s{first > 0 ? "..." : "", first > 0 ? "   " : "", 0};
  const size_t last = std::min(stop, col + std::max<size_t>(width, 1));  // one past the marked bytes
  for (size_t k = lo; k < hi; ++k) {
    const Unit& u = units[k];
    if (u.at < col) s.pad += u.text == "\t" ? std::string("\t") : std::string(u.cols, ' ');
    else if (u.at < last) s.width += u.cols;
    s.line += u.text;
  }
  if (stop < text.size()) s.line += "...";
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
