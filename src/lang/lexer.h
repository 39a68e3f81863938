// The .lg lexer: bytes to tokens. Newlines end statements except inside () and [], so long
// expressions can wrap there (as in Python). Malformed input becomes diagnostics, never a throw.
#pragma once

#include <vector>

#include "lang/diagnostics.h"
#include "lang/token.h"

namespace lg::lang {

/// Tokenizes file `file` of `sources`. The result always ends with Tok::End. Errors (a stray
/// character, an unterminated string, a number out of range) go to `diags`.
std::vector<Token> lex(const SourceManager& sources, int32_t file, Diagnostics& diags);

}  // namespace lg::lang
