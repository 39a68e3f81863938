#include "lang/parser.h"

#include <string>
#include <utility>
#include <vector>

namespace lg::lang {
namespace {

/// Thrown after a syntax error has been reported; caught where the parser can resynchronize.
struct SyntaxError {};
/// Thrown when nesting exceeds kMaxNesting; ends the parse of the file.
struct TooDeep {};

/// Identifiers and keywords: both may follow '.' (config.dtype, x.T).
bool is_word(Tok k) { return k == Tok::Ident || (k >= Tok::KwModel && k <= Tok::KwNone); }

class Parser {
 public:
  Parser(const std::vector<Token>& toks, Diagnostics& diags) : toks_(toks), diags_(diags) {}

  Module run() {
    Module m;
    try {
      skip_newlines();
      while (!at(Tok::End)) {
        try {
          if (at(Tok::KwModel)) {
            m.models.push_back(model());
          } else if (at(Tok::KwFn)) {
            m.fns.push_back(fn());
          } else {
            fail("expected 'model' or 'fn' at the top level");
          }
        } catch (const SyntaxError&) {
          sync_top();
        }
        close_dropped(m);
        skip_newlines();
      }
    } catch (const TooDeep&) {
    }
    close_dropped(m);
    return m;
  }

 private:
  // ---- token helpers
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  const Token& take() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  [[noreturn]] void fail(const std::string& expected) {
    if (at(Tok::Invalid)) diags_.error(cur().span, "unexpected character " + cur().text);
    else diags_.error(cur().span, expected + ", found " + describe(cur()));
    throw SyntaxError{};
  }
  const Token& expect(Tok k, const char* what = nullptr) {
    if (!at(k)) fail(std::string("expected ") + (what ? what : tok_name(k)));
    return take();
  }
  std::string ident(const char* what) {
    if (!at(Tok::Ident)) fail(std::string("expected ") + what);
    return take().text;
  }
  void skip_newlines() {
    while (at(Tok::Newline) || at(Tok::Semi)) take();
  }
  /// A declaration or statement ends at a newline, a ';' or just before the closing '}'.
  void end_of_item() {
    if (at(Tok::Newline) || at(Tok::Semi)) {
      skip_newlines();
      return;
    }
    if (at(Tok::RBrace) || at(Tok::End)) return;
    fail("expected end of line");
  }
  /// After an error inside a block: skip to the next item of the same block.
  void sync_item() {
    int depth = 0;
    while (!at(Tok::End)) {
      if (at(Tok::LBrace)) ++depth;
      if (at(Tok::RBrace)) {
        if (depth == 0) return;
        --depth;
      }
      if (depth == 0 && (at(Tok::Newline) || at(Tok::Semi))) {
        skip_newlines();
        return;
      }
      take();
    }
  }
  /// The names bound among tokens [from, to), which a syntax error dropped (Module::dropped):
  /// assigned (`NAME =`, `A, B =`, or `NAME ==` opening the statement) or declared (`const NAME`, `param NAME`, `state NAME`, `dtype
  /// NAME`), and "layers" where the text held that keyword (a layers block swallowed by an open
  /// bracket). Their scope ends with the model or fn holding them (close_dropped).
  void note_dropped_names(size_t from, size_t to) {
    const Span start = toks_[from].span;
    for (size_t k = from; k + 1 < to && k + 1 < toks_.size(); ++k) {
      const Tok kind = toks_[k].kind;
      if (kind == Tok::KwLayers) open_dropped_.push_back({"layers", start, {}});  // a layers block, maybe
      if ((kind == Tok::KwConst || kind == Tok::KwParam || kind == Tok::KwState || kind == Tok::KwDtype) &&
          toks_[k + 1].kind == Tok::Ident) {
        open_dropped_.push_back({toks_[k + 1].text, start, {}});
        continue;
      }
      if (kind != Tok::Ident) continue;
      size_t j = k + 1;
      while (j + 1 < to && toks_[j].kind == Tok::Comma && toks_[j + 1].kind == Tok::Ident) j += 2;
      // `NAME ==` opening the statement is a typo of `NAME =` (a comparison is no statement).
      if (toks_[j].kind != Tok::Assign && !(k == from && toks_[j].kind == Tok::Eq)) continue;
      for (size_t i = k; i < j; i += 2) open_dropped_.push_back({toks_[i].text, start, {}});
    }
  }
  /// Ends the scope of the names dropped in the model or fn just parsed at its last token.
  void close_dropped(Module& m) {
    const Span until = toks_[pos_ > 0 ? pos_ - 1 : 0].span;
    for (DroppedName& d : open_dropped_) {
      d.until = until;
      m.dropped.push_back(std::move(d));
    }
    open_dropped_.clear();
  }
  /// After an error at the top level: skip to the next 'model' or 'fn' that starts a line.
  void sync_top() {
    while (!at(Tok::End)) {
      take();
      if ((at(Tok::KwModel) || at(Tok::KwFn)) && pos_ > 0 && toks_[pos_ - 1].kind == Tok::Newline) return;
    }
  }
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) {
        p.diags_.error(p.cur().span, "nesting too deep: more than " + std::to_string(kMaxNesting) + " levels");
        throw TooDeep{};
      }
    }
    ~Nest() { --p.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  ExprPtr node(ExprKind k, Span s) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->span = s;
    return e;
  }
  Span prev_end(Span begin) const {
    const Span& p = toks_[pos_ > 0 ? pos_ - 1 : 0].span;
    begin.end_line = p.end_line;
    begin.end_col = p.end_col;
    return begin;
  }

  // ---- declarations
  Model model() {
    Model m;
    m.span = take().span;
    m.name = ident("a model name");
    expect(Tok::LBrace);
    skip_newlines();
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      const size_t start = pos_, decls = m.decls.size();
      try {
        model_item(m);
        end_of_item();
      } catch (const SyntaxError&) {
        m.decls.erase(m.decls.begin() + static_cast<std::ptrdiff_t>(decls), m.decls.end());  // as block()
        sync_item();
        note_dropped_names(start, pos_);
      }
    }
    expect(Tok::RBrace, "'}' to close the model");
    return m;
  }

  void model_item(Model& m) {
    switch (cur().kind) {
      case Tok::KwDims: {
        take();
        expect(Tok::LBrace);
        skip_newlines();
        while (!at(Tok::RBrace) && !at(Tok::End)) {
          const size_t start = pos_;
          try {
            Decl d;
            d.kind = DeclKind::Dim;
            d.span = d.name_span = cur().span;
            d.name = ident("a dim name");
            expect(Tok::Assign);
            d.value = expr();
            d.span = prev_end(d.span);
            end_of_item();
            m.decls.push_back(std::move(d));
          } catch (const SyntaxError&) {
            sync_item();
            note_dropped_names(start, pos_);
          }
        }
        expect(Tok::RBrace);
        return;
      }
      case Tok::KwConst:
      case Tok::KwDtype: {
        Decl d;
        d.kind = at(Tok::KwConst) ? DeclKind::Const : DeclKind::DType;
        d.span = take().span;
        d.name_span = cur().span;
        d.name = ident(d.kind == DeclKind::Const ? "a constant name" : "a dtype name");
        expect(Tok::Assign);
        d.value = expr();
        d.span = prev_end(d.span);
        m.decls.push_back(std::move(d));
        return;
      }
      case Tok::KwParam: m.decls.push_back(param()); return;
      case Tok::KwState: {
        Decl d;
        d.kind = DeclKind::State;
        d.span = take().span;
        d.name_span = cur().span;
        d.name = ident("a state name");
        expect(Tok::Colon);
        d.type = type();
        d.span = prev_end(d.span);
        m.decls.push_back(std::move(d));
        return;
      }
      case Tok::KwRequire: {
        Decl d;
        d.kind = DeclKind::Require;
        d.span = take().span;
        d.value = expr();
        if (accept(Tok::Comma)) d.value2 = expr();
        d.span = prev_end(d.span);
        m.decls.push_back(std::move(d));
        return;
      }
      case Tok::KwLayers: {
        Decl d;
        d.kind = DeclKind::Layers;
        block_range(d, "a layer variable");
        while (!at(Tok::RBrace) && !at(Tok::End)) {
          try {
            if (at(Tok::Ident) && cur().text == "experts" && peek().kind == Tok::Ident) {
              d.body.push_back(experts_block());
            } else {
              if (!at(Tok::KwParam))
                fail("expected 'param' or 'experts' (a layers block declares per-layer params)");
              d.body.push_back(param());
            }
            end_of_item();
          } catch (const SyntaxError&) {
            sync_item();
          }
        }
        expect(Tok::RBrace);
        m.decls.push_back(std::move(d));
        return;
      }
      case Tok::KwForward: {
        if (m.forward.present) diags_.error(cur().span, "a model has one forward; this is a second one");
        m.forward = forward();
        return;
      }
      default:
        fail("expected a declaration (dims, const, dtype, param, layers, state, require, forward)");
    }
  }

  // The head of a layers or experts block, `layers l in 0..L {` / `experts e in 0..E {`: its
  // keyword, variable and range into d, through the opening brace.
  void block_range(Decl& d, const char* variable) {
    d.span = take().span;
    d.name_span = cur().span;
    d.name = ident(variable);
    expect(Tok::KwIn);
    d.value = additive();
    expect(Tok::DotDot);
    d.value2 = additive();
    d.span = prev_end(d.span);
    expect(Tok::LBrace);
    skip_newlines();
  }

  // `experts e in 0..E { param ... }` inside a layers block (`experts` is a word only there).
  Decl experts_block() {
    Decl d;
    d.kind = DeclKind::Experts;
    block_range(d, "an expert variable");
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      if (!at(Tok::KwParam)) fail("expected 'param' (an experts block declares per-expert params)");
      d.body.push_back(param());
      end_of_item();
    }
    expect(Tok::RBrace);
    return d;
  }

  Decl param() {
    Decl d;
    d.kind = DeclKind::Param;
    d.span = take().span;
    d.name_span = cur().span;
    d.name = ident("a param name");
    expect(Tok::Colon);
    d.type = type();
    expect(Tok::Assign, "'=' and the checkpoint tensor name");
    d.value = expr();
    d.span = prev_end(d.span);
    return d;
  }

  TypeExpr type() {
    TypeExpr t;
    t.span = t.dtype_span = cur().span;
    t.dtype = ident("a dtype (bf16, f16, f32, i32, bool)");
    expect(Tok::LBracket, "'[' and the shape");
    if (!at(Tok::RBracket)) {
      t.dims.push_back(expr());
      while (accept(Tok::Comma)) t.dims.push_back(expr());
    }
    expect(Tok::RBracket, "',' or ']'");
    t.span = prev_end(t.span);
    return t;
  }

  Forward forward() {
    Forward f;
    f.present = true;
    f.span = take().span;
    expect(Tok::LParen);
    if (!at(Tok::RParen)) {
      do {
        InputDecl in;
        in.span = cur().span;
        in.name = ident("an input name");
        expect(Tok::Colon);
        in.type = type();
        f.inputs.push_back(std::move(in));
      } while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "',' or ')'");
    expect(Tok::Arrow, "'->' and the result type");
    f.result = type();
    f.body = block(&f.end_span);
    return f;
  }

  FnDecl fn() {
    FnDecl f;
    take();
    f.span = cur().span;
    f.name = ident("a function name");
    expect(Tok::LParen);
    if (!at(Tok::RParen)) {
      do {
        f.param_spans.push_back(cur().span);
        f.params.push_back(ident("a parameter name"));
      } while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "',' or ')'");
    if (accept(Tok::Assign)) {
      Stmt s;
      s.kind = StmtKind::Return;
      s.span = cur().span;
      s.value = expr();
      s.span = prev_end(s.span);
      f.body.push_back(std::move(s));
      end_of_item();
    } else if (at(Tok::LBrace)) {
      f.body = block(nullptr);
    } else {
      fail("expected '=' or '{' after the parameters");
    }
    return f;
  }

  // ---- statements
  std::vector<Stmt> block(Span* end_span) {
    Nest nest(*this);
    expect(Tok::LBrace);
    skip_newlines();
    std::vector<Stmt> body;
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      const size_t start = pos_;
      try {
        // Kept only once its line ends well: `q = h × w` parses as `q = h` up to the stray
        // character, and binding that would raise false shape errors further on.
        Stmt s = stmt();
        end_of_item();
        body.push_back(std::move(s));
      } catch (const SyntaxError&) {
        sync_item();
        note_dropped_names(start, pos_);
      }
    }
    if (end_span) *end_span = cur().span;
    expect(Tok::RBrace, "'}' to close the block");
    return body;
  }

  Stmt stmt() {
    Stmt s;
    s.span = cur().span;
    if (accept(Tok::KwFor)) {
      s.kind = StmtKind::For;
      s.name_span = cur().span;
      s.name = ident("a loop variable");
      expect(Tok::KwIn);
      s.range_span = cur().span;
      if (at(Tok::KwLayers)) {
        s.range = take().text;
      } else {
        s.range = ident("'layers'");
      }
      s.span = prev_end(s.span);
      s.body = block(nullptr);
      return s;
    }
    if (accept(Tok::KwReturn)) {
      s.kind = StmtKind::Return;
      s.value = expr();
      s.span = prev_end(s.span);
      return s;
    }
    if (accept(Tok::KwRequire)) {
      s.kind = StmtKind::Require;
      s.value = expr();
      if (accept(Tok::Comma)) s.message = expr();
      s.span = prev_end(s.span);
      return s;
    }
    if (at(Tok::Ident) && peek().kind == Tok::Comma) {  // `a, b = f(...)`: one name per result
      s.kind = StmtKind::Let;
      do {
        s.name_spans.push_back(cur().span);
        s.names.push_back(ident("a name"));
      } while (accept(Tok::Comma));
      s.name = s.names.front();
      s.name_span = s.name_spans.front();
      expect(Tok::Assign, "'=' after the names");
      s.value = expr();
      s.span = prev_end(s.span);
      return s;
    }
    if (at(Tok::Ident) && peek().kind == Tok::Assign) {
      s.kind = StmtKind::Let;
      s.name_span = cur().span;
      s.name = take().text;
      take();
      s.value = expr();
      s.span = prev_end(s.span);
      return s;
    }
    ExprPtr target = expr();
    if (!at(Tok::Assign))
      fail("expected '=' after the expression (a statement is `name = ...`, a state write `s[...] = ...`, `for` or `return`)");
    take();
    s.kind = StmtKind::Write;
    s.target = std::move(target);
    s.value = expr();
    s.span = prev_end(s.span);
    return s;
  }

  // ---- expressions, lowest precedence first
  ExprPtr expr() {
    Nest nest(*this);
    ExprPtr c = coalesce();
    if (at(Tok::Question)) {
      take();
      ExprPtr a = expr();
      expect(Tok::Colon, "':' of the conditional");
      ExprPtr b = expr();
      auto e = node(ExprKind::Ternary, join(c->span, b->span));
      e->args.push_back(std::move(c));
      e->args.push_back(std::move(a));
      e->args.push_back(std::move(b));
      return e;
    }
    return c;
  }

  ExprPtr binary_left(ExprPtr (Parser::*next)(), std::initializer_list<Tok> ops) {
    ExprPtr lhs = (this->*next)();
    while (true) {
      Tok op = cur().kind;
      bool match = false;
      for (Tok o : ops) match = match || o == op;
      if (!match) return lhs;
      take();
      Nest nest(*this);
      ExprPtr rhs = (this->*next)();
      auto e = node(ExprKind::Binary, join(lhs->span, rhs->span));
      e->op = op;
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      lhs = std::move(e);
    }
  }
  ExprPtr coalesce() { return binary_left(&Parser::logic_or, {Tok::QuestionQuestion}); }
  ExprPtr logic_or() { return binary_left(&Parser::logic_and, {Tok::OrOr}); }
  ExprPtr logic_and() { return binary_left(&Parser::comparison, {Tok::AndAnd}); }
  ExprPtr comparison() {
    ExprPtr lhs = additive();
    Tok op = cur().kind;
    if (op == Tok::Eq || op == Tok::Ne || op == Tok::Lt || op == Tok::Le || op == Tok::Gt || op == Tok::Ge) {
      take();
      ExprPtr rhs = additive();
      auto e = node(ExprKind::Binary, join(lhs->span, rhs->span));
      e->op = op;
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      return e;
    }
    return lhs;
  }
  ExprPtr additive() { return binary_left(&Parser::multiplicative, {Tok::Plus, Tok::Minus}); }
  ExprPtr multiplicative() {
    return binary_left(&Parser::unary, {Tok::Star, Tok::Slash, Tok::SlashSlash, Tok::Percent, Tok::At});
  }
  ExprPtr unary() {
    Nest nest(*this);
    if (at(Tok::Minus) || at(Tok::Not)) {
      Span s = cur().span;
      Tok op = take().kind;
      ExprPtr operand = unary();
      auto e = node(ExprKind::Unary, join(s, operand->span));
      e->op = op;
      e->args.push_back(std::move(operand));
      return e;
    }
    return power();
  }
  ExprPtr power() {
    ExprPtr base = postfix();
    if (at(Tok::StarStar)) {
      take();
      ExprPtr exponent = unary();  // right-associative; -x**2 is -(x**2)
      auto e = node(ExprKind::Binary, join(base->span, exponent->span));
      e->op = Tok::StarStar;
      e->args.push_back(std::move(base));
      e->args.push_back(std::move(exponent));
      return e;
    }
    return base;
  }
  ExprPtr postfix() {
    ExprPtr e = primary();
    int chain = 0;
    while (true) {
      if (++chain > kMaxNesting) {
        diags_.error(cur().span, "nesting too deep: more than " + std::to_string(kMaxNesting) + " levels");
        throw TooDeep{};
      }
      if (at(Tok::Dot)) {
        take();
        const Token& field = cur();
        if (!is_word(field.kind)) fail("expected a field or method name after '.'");
        auto m = node(ExprKind::Member, join(e->span, field.span));
        m->text = take().text;
        m->args.push_back(std::move(e));
        e = std::move(m);
      } else if (at(Tok::LParen)) {
        take();
        auto c = node(ExprKind::Call, e->span);
        c->args.push_back(std::move(e));
        if (!at(Tok::RParen)) {
          do {
            std::string kw;
            if (at(Tok::Ident) && peek().kind == Tok::Assign) {
              kw = take().text;
              take();
            }
            c->args.push_back(expr());
            c->arg_names.push_back(kw);
          } while (accept(Tok::Comma));
        }
        expect(Tok::RParen, "',' or ')'");
        c->span = prev_end(c->span);
        e = std::move(c);
      } else if (at(Tok::LBracket)) {
        take();
        auto ix = node(ExprKind::Index, e->span);
        ix->args.push_back(std::move(e));
        do {
          ix->args.push_back(index_item());
        } while (accept(Tok::Comma));
        expect(Tok::RBracket, "',' or ']'");
        ix->span = prev_end(ix->span);
        e = std::move(ix);
      } else {
        return e;
      }
    }
  }
  ExprPtr index_item() {
    Span s = cur().span;
    if (at(Tok::Ellipsis)) return node(ExprKind::Ellipsis, take().span);
    ExprPtr start;
    if (!at(Tok::Colon)) {
      start = expr();
      if (!at(Tok::Colon)) return start;
    }
    auto sl = node(ExprKind::Slice, s);
    take();  // ':'
    ExprPtr stop, step;
    if (!at(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket)) stop = expr();
    if (accept(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket)) step = expr();
    sl->args.push_back(std::move(start));
    sl->args.push_back(std::move(stop));
    sl->args.push_back(std::move(step));
    sl->span = prev_end(s);
    return sl;
  }
  ExprPtr primary() {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::Int: {
        auto e = node(ExprKind::Int, t.span);
        e->int_value = t.int_value;
        e->out_of_range = t.out_of_range;
        e->text = t.text;
        take();
        return e;
      }
      case Tok::Float: {
        auto e = node(ExprKind::Float, t.span);
        e->float_value = t.float_value;
        e->out_of_range = t.out_of_range;
        e->text = t.text;
        take();
        return e;
      }
      case Tok::String: {
        auto e = node(ExprKind::String, t.span);
        e->text = t.text;
        take();
        return e;
      }
      case Tok::KwTrue:
      case Tok::KwFalse: {
        auto e = node(ExprKind::Bool, t.span);
        e->bool_value = t.kind == Tok::KwTrue;
        take();
        return e;
      }
      case Tok::KwNone: return node(ExprKind::None, take().span);
      case Tok::Ident: {
        auto e = node(ExprKind::Name, t.span);
        e->text = t.text;
        take();
        return e;
      }
      case Tok::KwConfig: {
        auto e = node(ExprKind::Config, take().span);
        if (!at(Tok::Dot)) fail("expected '.' and a key after 'config'");
        while (at(Tok::Dot) && is_word(peek().kind)) {
          take();
          e->path.push_back(take().text);
          if (e->path.size() > 16) fail("expected a config path of at most 16 keys");
        }
        e->span = prev_end(e->span);
        return e;
      }
      case Tok::LParen: {
        Span open = take().span;
        ExprPtr e = expr();
        expect(Tok::RParen);
        e->span = prev_end(join(open, e->span));  // the caret covers the parentheses too
        return e;
      }
      default: fail("expected an expression");
    }
  }

  const std::vector<Token>& toks_;
  Diagnostics& diags_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<DroppedName> open_dropped_;  ///< dropped in the model or fn being parsed (close_dropped)
};

}  // namespace

Module parse(const std::vector<Token>& tokens, Diagnostics& diags) { return Parser(tokens, diags).run(); }

}  // namespace lg::lang
