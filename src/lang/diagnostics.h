// Diagnostics of the .lg front end. Errors are collected, not thrown, so that one run reports every
// independent mistake; rendering quotes the source line with a caret under the fault, the way
// compilers in the field do (file:line:col: error: ...).
#pragma once

#include <string>
#include <vector>

#include "lang/source.h"

namespace lg::lang {

/// One error: where, what was expected and what was found, and optional notes (e.g. the call
/// site a function was inlined from).
struct Diagnostic {
  Span span;
  std::string message;
  struct Note {
    Span span;
    std::string message;
  };
  std::vector<Note> notes;
};

/// Collects errors for one compilation. After `limit` errors further ones are counted but dropped,
/// so that a pathological input cannot grow the list without bound.
class Diagnostics {
 public:
  explicit Diagnostics(const SourceManager& sources, size_t limit = 50) : sources_(sources), limit_(limit) {}

  /// Records an error at `span`. Identical errors (same place, same text) are reported once,
  /// which matters because layer bodies are checked once per layer.
  void error(const Span& span, std::string message, std::vector<Diagnostic::Note> notes = {});
  bool has_errors() const { return count_ > 0; }
  size_t count() const { return count_; }
  const std::vector<Diagnostic>& list() const { return list_; }
  /// All errors as text: `file:line:col: error: message`, the source line, a caret line, notes.
  std::string render() const;

 private:
  std::string render_one(const Span& span, const std::string& kind, const std::string& message) const;
  const SourceManager& sources_;
  size_t limit_;
  size_t count_ = 0;
  std::vector<Diagnostic> list_;
};

}  // namespace lg::lang
