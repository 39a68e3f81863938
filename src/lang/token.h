// Tokens of the .lg language (docs/language.md, "Lexical structure").
#pragma once

#include <cstdint>
#include <string>

#include "lang/source.h"

namespace lg::lang {

enum class Tok : uint8_t {
  End, Newline, Ident, Int, Float, String,
  Invalid,  ///< a byte that starts no token; the parser reports it where it meets it
  // keywords
  KwModel, KwDims, KwConst, KwDtype, KwParam, KwLayers, KwState, KwForward, KwFn, KwFor, KwIn,
  KwReturn, KwRequire, KwConfig, KwTrue, KwFalse, KwNone,
  // punctuation
  LParen, RParen, LBracket, RBracket, LBrace, RBrace, Comma, Colon, Semi, Dot, DotDot, Ellipsis,
  Assign, Arrow, Question, QuestionQuestion,
  Plus, Minus, Star, Slash, SlashSlash, Percent, StarStar, At,
  Eq, Ne, Lt, Le, Gt, Ge, Not, AndAnd, OrOr,
};

/// How a token kind is written, for "expected X, found Y" messages (e.g. "')'", "identifier").
const char* tok_name(Tok t);

struct Token {
  Tok kind = Tok::End;
  Span span;
  std::string text;  ///< identifier spelling, string contents (escapes resolved), number spelling
  int64_t int_value = 0;
  double float_value = 0;
  /// A number literal too large for int64 / double (or a double underflow): the lexer reported
  /// it, and its value (clamped by strtoll/strtod) must not be checked again downstream.
  bool out_of_range = false;
};

/// "identifier 'foo'", "number 3", "')'", "end of line": what the parser found, for messages.
std::string describe(const Token& t);

}  // namespace lg::lang
