#include "lang/diagnostics.h"

#include <algorithm>

namespace lg::lang {

void Diagnostics::error(const Span& span, std::string message, std::vector<Diagnostic::Note> notes) {
  for (const auto& d : list_)
    if (d.span.file == span.file && d.span.line == span.line && d.span.col == span.col && d.message == message)
      return;
  ++count_;
  if (list_.size() < limit_) list_.push_back({span, std::move(message), std::move(notes)});
}

std::string Diagnostics::render_one(const Span& span, const std::string& kind, const std::string& message) const {
  std::string out;
  if (span.file < 0 || static_cast<size_t>(span.file) >= sources_.size()) return kind + ": " + message + "\n";
  const SourceFile& f = sources_.file(span.file);
  out += f.name + ":" + std::to_string(span.line) + ":" + std::to_string(span.col) + ": " + kind + ": " + message + "\n";
  std::string_view text = f.line(span.line);
  if (text.empty() && span.line > static_cast<int32_t>(f.line_starts.size())) return out;
  std::string gutter = std::to_string(span.line);
  out += " " + gutter + " | " + std::string(text) + "\n";
  out += " " + std::string(gutter.size(), ' ') + " | ";
  // Keep tabs so the caret lines up under the same column as the source line.
  size_t col = static_cast<size_t>(std::max(1, span.col)) - 1;
  for (size_t i = 0; i < col && i < text.size(); ++i) out += text[i] == '\t' ? '\t' : ' ';
  out += '^';
  size_t width = 0;
  if (span.end_line == span.line && span.end_col > span.col) width = static_cast<size_t>(span.end_col - span.col);
  if (span.end_line > span.line) width = text.size() > col ? text.size() - col : 0;
  for (size_t i = 1; i < width && i < 200; ++i) out += '~';
  out += "\n";
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
