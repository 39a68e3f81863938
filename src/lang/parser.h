// The .lg parser: hand-written recursive descent over the token list (grammar in
// docs/language.md). On a syntax error it reports "expected X, found Y", skips to the end of the
// statement or declaration, and goes on, so independent errors are all reported in one run.
// Nesting is bounded so that no input can exhaust the stack.
#pragma once

#include <vector>

#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace lg::lang {

/// Deepest expression/block nesting the parser accepts; deeper input is a diagnostic.
inline constexpr int kMaxNesting = 200;

/// Parses a token list of one file (from lex) into a Module; errors go to `diags`.
Module parse(const std::vector<Token>& tokens, Diagnostics& diags);

}  // namespace lg::lang
