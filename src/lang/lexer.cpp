#include "lang/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

namespace lg::lang {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::End: return "end of file";
    case Tok::Newline: return "end of line";
    case Tok::Ident: return "identifier";
    case Tok::Int: return "integer";
    case Tok::Float: return "number";
    case Tok::String: return "string";
    case Tok::Invalid: return "invalid character";
    case Tok::KwModel: return "'model'";
    case Tok::KwDims: return "'dims'";
    case Tok::KwConst: return "'const'";
    case Tok::KwDtype: return "'dtype'";
    case Tok::KwParam: return "'param'";
    case Tok::KwLayers: return "'layers'";
    case Tok::KwState: return "'state'";
    case Tok::KwForward: return "'forward'";
    case Tok::KwFn: return "'fn'";
    case Tok::KwFor: return "'for'";
    case Tok::KwIn: return "'in'";
    case Tok::KwReturn: return "'return'";
    case Tok::KwRequire: return "'require'";
    case Tok::KwConfig: return "'config'";
    case Tok::KwTrue: return "'true'";
    case Tok::KwFalse: return "'false'";
    case Tok::KwNone: return "'none'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Semi: return "';'";
    case Tok::Dot: return "'.'";
    case Tok::DotDot: return "'..'";
    case Tok::Ellipsis: return "'...'";
    case Tok::Assign: return "'='";
    case Tok::Arrow: return "'->'";
    case Tok::Question: return "'?'";
    case Tok::QuestionQuestion: return "'?\?'";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::SlashSlash: return "'//'";
    case Tok::Percent: return "'%'";
    case Tok::StarStar: return "'**'";
    case Tok::At: return "'@'";
    case Tok::Eq: return "'=='";
    case Tok::Ne: return "'!='";
    case Tok::Lt: return "'<'";
    case Tok::Le: return "'<='";
    case Tok::Gt: return "'>'";
    case Tok::Ge: return "'>='";
    case Tok::Not: return "'!'";
    case Tok::AndAnd: return "'&&'";
    case Tok::OrOr: return "'||'";
  }
  return "token";
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Ident: return "identifier '" + t.text + "'";
    case Tok::Int:
    case Tok::Float: return "number " + t.text;
    case Tok::String: return "string \"" + t.text.substr(0, 40) + "\"";
    default: return tok_name(t.kind);
  }
}

namespace {

const std::unordered_map<std::string_view, Tok>& keywords() {
  static const std::unordered_map<std::string_view, Tok> k = {
      {"model", Tok::KwModel},   {"dims", Tok::KwDims},       {"const", Tok::KwConst},
      {"dtype", Tok::KwDtype},   {"param", Tok::KwParam},     {"layers", Tok::KwLayers},
      {"state", Tok::KwState},   {"forward", Tok::KwForward}, {"fn", Tok::KwFn},
      {"for", Tok::KwFor},       {"in", Tok::KwIn},           {"return", Tok::KwReturn},
      {"require", Tok::KwRequire}, {"config", Tok::KwConfig}, {"true", Tok::KwTrue},
      {"false", Tok::KwFalse},   {"none", Tok::KwNone}};
  return k;
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(const SourceFile& f, int32_t file, Diagnostics& diags) : src_(f.text), file_(file), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skip_space_and_comments(out);
      if (pos_ >= src_.size()) break;
      Token t = next();
      out.push_back(std::move(t));
    }
    if (!out.empty() && out.back().kind != Tok::Newline) out.push_back(make(Tok::Newline, line_, col_));
    out.push_back(make(Tok::End, line_, col_));
    return out;
  }

 private:
  Token make(Tok k, int32_t line, int32_t col) {
    Token t;
    t.kind = k;
    t.span = {file_, line, col, line_, col_};
    return t;
  }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
  /// Consumes one character of a comment or a string: a UTF-8 sequence whole, or one byte that is
  /// not UTF-8, reported. Outside comments and strings every byte past ASCII is an unexpected
  /// character already; inside them bytes used to be taken as they came, so a comment in Latin-1
  /// passed unnoticed in a file the language says is UTF-8.
  void advance_text() {
    const auto c = static_cast<unsigned char>(src_[pos_]);
    const size_t n = c < 0x80 ? 1 : utf8_len(src_, pos_);
    if (n == 0)
      diags_.error({file_, line_, col_, line_, col_ + 1}, fmt::format("invalid UTF-8 byte 0x{:02x} (a .lg file is UTF-8 text)", c));
    for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) advance();
  }

  void skip_space_and_comments(std::vector<Token>& out) {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance_text();
      } else if (c == '\n') {
        // Inside () and [] a newline is just space; elsewhere it ends a statement (once).
        if (depth_ == 0 && !out.empty() && out.back().kind != Tok::Newline && out.back().kind != Tok::LBrace) {
          Token t = make(Tok::Newline, line_, col_);
          t.span.end_col = col_ + 1;
          out.push_back(t);
        }
        advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else {
        break;
      }
    }
  }

  Token next() {
    int32_t line = line_, col = col_;
    char c = peek();
    if (is_ident_start(c)) {
      size_t begin = pos_;
      while (is_ident_start(peek()) || is_digit(peek())) advance();
      Token t = make(Tok::Ident, line, col);
      t.text = src_.substr(begin, pos_ - begin);
      auto it = keywords().find(t.text);
      if (it != keywords().end()) t.kind = it->second;
      return t;
    }
    if (is_digit(c)) return number(line, col);
    if (c == '"') return string(line, col);
    auto punct = [&](Tok k, int n) {
      for (int i = 0; i < n; ++i) advance();
      return make(k, line, col);
    };
    char d = peek(1);
    switch (c) {
      case '(': ++depth_; return punct(Tok::LParen, 1);
      case ')': if (depth_ > 0) --depth_; return punct(Tok::RParen, 1);
      case '[': ++depth_; return punct(Tok::LBracket, 1);
      case ']': if (depth_ > 0) --depth_; return punct(Tok::RBracket, 1);
      // Braces never occur inside () or []: meeting one means a parenthesis was left open, and
      // resetting the depth keeps that mistake from swallowing the rest of the file's newlines.
      case '{': depth_ = 0; return punct(Tok::LBrace, 1);
      case '}': depth_ = 0; return punct(Tok::RBrace, 1);
      case ',': return punct(Tok::Comma, 1);
      case ':': return punct(Tok::Colon, 1);
      case ';': return punct(Tok::Semi, 1);
      case '.':
        if (d == '.' && peek(2) == '.') return punct(Tok::Ellipsis, 3);
        if (d == '.') return punct(Tok::DotDot, 2);
        return punct(Tok::Dot, 1);
      case '=': return d == '=' ? punct(Tok::Eq, 2) : punct(Tok::Assign, 1);
      case '-': return d == '>' ? punct(Tok::Arrow, 2) : punct(Tok::Minus, 1);
      case '?': return d == '?' ? punct(Tok::QuestionQuestion, 2) : punct(Tok::Question, 1);
      case '+': return punct(Tok::Plus, 1);
      case '*': return d == '*' ? punct(Tok::StarStar, 2) : punct(Tok::Star, 1);
      case '/': return d == '/' ? punct(Tok::SlashSlash, 2) : punct(Tok::Slash, 1);
      case '%': return punct(Tok::Percent, 1);
      case '@': return punct(Tok::At, 1);
      case '!': return d == '=' ? punct(Tok::Ne, 2) : punct(Tok::Not, 1);
      case '<': return d == '=' ? punct(Tok::Le, 2) : punct(Tok::Lt, 1);
      case '>': return d == '=' ? punct(Tok::Ge, 2) : punct(Tok::Gt, 1);
      case '&':
        if (d == '&') return punct(Tok::AndAnd, 2);
        break;
      case '|':
        if (d == '|') return punct(Tok::OrOr, 2);
        break;
      default: break;
    }
    const auto u = static_cast<unsigned char>(c);
    const size_t n = u < 0x80 ? 1 : utf8_len(src_, pos_);
    const std::string seq(src_.substr(pos_, std::max<size_t>(n, 1)));
    for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) advance();
    Token bad = make(Tok::Invalid, line, col);
    if (u >= 32 && u < 127)
      bad.text = std::string("'") + c + "'";
    else if (n > 1 && acts_on_terminal(utf8_code_point(seq, 0, n)))  // not put raw into the message
      bad.text = fmt::format("U+{:04X} (a control or invisible formatting character)", utf8_code_point(seq, 0, n));
    else if (n > 1)  // named, as the user typed it: a Greek letter, a smart quote, a no-break space
      bad.text = fmt::format("'{}' (U+{:04X}; names and operators are ASCII, other characters may stand in strings and "
                             "comments)", seq, utf8_code_point(seq, 0, n));
    else if (n == 0)
      bad.text = fmt::format("byte 0x{:02x} (not UTF-8: a .lg file is UTF-8 text)", u);
    else
      bad.text = fmt::format("byte 0x{:02x} (a control character)", u);
    return bad;
  }

  Token number(int32_t line, int32_t col) {
    size_t begin = pos_;
    bool is_float = false;
    while (is_digit(peek())) advance();
    // "0..L" is a range, so a '.' makes a float only when a digit follows it.
    if (peek() == '.' && is_digit(peek(1))) {
      is_float = true;
      advance();
      while (is_digit(peek())) advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (is_digit(peek(1)) || ((peek(1) == '-' || peek(1) == '+') && is_digit(peek(2))))) {
      is_float = true;
      advance();
      if (peek() == '-' || peek() == '+') advance();
      while (is_digit(peek())) advance();
    }
    Token t = make(is_float ? Tok::Float : Tok::Int, line, col);
    t.text = src_.substr(begin, pos_ - begin);
    errno = 0;
    if (is_float) {
      t.float_value = std::strtod(t.text.c_str(), nullptr);
      t.out_of_range = errno == ERANGE || !std::isfinite(t.float_value);
      if (t.out_of_range) diags_.error(t.span, "number " + t.text + " is out of range");
    } else {
      t.int_value = std::strtoll(t.text.c_str(), nullptr, 10);
      t.out_of_range = errno == ERANGE;
      if (t.out_of_range) diags_.error(t.span, "integer " + t.text + " is out of range");
    }
    return t;
  }

  Token string(int32_t line, int32_t col) {
    advance();  // opening quote
    std::string value;
    while (pos_ < src_.size() && peek() != '"' && peek() != '\n') {
      char c = peek();
      if (c == '\\' && pos_ + 1 < src_.size()) {
        char e = peek(1);
        advance();
        advance();
        if (e == 'n') value += '\n';
        else if (e == 't') value += '\t';
        else if (e == '"' || e == '\\') value += e;
        else diags_.error({file_, line_, col_ - 2, line_, col_}, std::string("unknown escape '\\") + e + "' in string");
        continue;
      }
      const size_t begin = pos_;
      advance_text();
      value.append(src_, begin, pos_ - begin);
    }
    Token t = make(Tok::String, line, col);
    if (peek() != '"') {
      t.span.end_col = t.span.col + 1;
      diags_.error(t.span, "unterminated string: expected '\"' before the end of the line");
    } else {
      advance();
      t.span.end_col = col_;
    }
    t.text = std::move(value);
    return t;
  }

  const std::string& src_;
  int32_t file_;
  Diagnostics& diags_;
  size_t pos_ = 0;
  int32_t line_ = 1, col_ = 1;
  int depth_ = 0;
};

}  // namespace

std::vector<Token> lex(const SourceManager& sources, int32_t file, Diagnostics& diags) {
  return Lexer(sources.file(file), file, diags).run();
}

}  // namespace lg::lang
