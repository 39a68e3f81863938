// The .lg abstract syntax tree: what the parser produces and the checker/lowering walks. Every
// node carries the Span it was parsed from. Plain data; no semantics here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lang/source.h"
#include "lang/token.h"

namespace lg::lang {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
  Int,       ///< int_value
  Float,     ///< float_value
  Bool,      ///< bool_value
  String,    ///< text
  None,      ///< `none`
  Name,      ///< text
  Config,    ///< config.a.b: path in `path`
  Unary,     ///< op, args[0]
  Binary,    ///< op, args[0], args[1]
  Ternary,   ///< args[0] ? args[1] : args[2]
  Member,    ///< args[0].text
  Call,      ///< args[0] is the callee (Name or Member), args[1..] the arguments, arg_names[i-1]
  Index,     ///< args[0][args[1], ...]
  Slice,     ///< start:stop:step inside an Index; absent parts are null
  Ellipsis,  ///< `...` inside an Index
};

struct Expr {
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  Expr(Expr&&) = default;
  Expr& operator=(Expr&&) = default;
  /// Frees the subtree without recursion: a 200,000-term `a + b + ...` is a left-deep tree that
  /// deep, and the default destructor would recurse once per level and overflow the stack.
  ~Expr() {
    if (args.empty()) return;
    std::vector<ExprPtr> todo;
    for (auto& a : args)
      if (a) todo.push_back(std::move(a));
    while (!todo.empty()) {
      ExprPtr e = std::move(todo.back());
      todo.pop_back();
      for (auto& a : e->args)
        if (a) todo.push_back(std::move(a));
    }  // each `e` dies here with its children moved out: one level deep
  }

  ExprKind kind;
  Span span;
  Tok op = Tok::End;
  std::string text;
  std::vector<std::string> path;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  bool out_of_range = false;  ///< Int/Float: the literal's token was out of range (reported by the lexer)
  std::vector<ExprPtr> args;
  std::vector<std::string> arg_names;  ///< Call: keyword of each argument ("" if positional)
};

/// `dtype[d0, d1, ...]`: a tensor type. The dtype is a name (bf16, f32, or a `dtype` declaration).
struct TypeExpr {
  Span span;
  std::string dtype;
  Span dtype_span;
  std::vector<ExprPtr> dims;
};

enum class StmtKind : uint8_t {
  Let,     ///< name = value
  Write,   ///< target[...] = value, target an Index expression (a state write)
  For,     ///< for name in layers { body }
  Return,  ///< return value
  Require, ///< require value [, message]: a compile-time check, per layer inside `for`
};

struct Stmt {
  StmtKind kind;
  Span span;
  std::string name;
  Span name_span;
  /// Let of several names (`w, idx = topk(...)`): all of them, `name` being the first; empty for one.
  std::vector<std::string> names;
  std::vector<Span> name_spans;
  ExprPtr target;
  ExprPtr value;
  ExprPtr message;    ///< Require: the message (optional)
  std::string range;  ///< For: what is iterated ("layers")
  Span range_span;
  std::vector<Stmt> body;
};

enum class DeclKind : uint8_t { Dim, Const, DType, Param, Layers, State, Require, Experts };

/// A declaration of the model block, kept in source order because later ones may use earlier ones.
struct Decl {
  DeclKind kind;
  Span span;
  std::string name;  ///< Dim/Const/DType/Param/State name; Layers: the layer variable
  Span name_span;
  ExprPtr value;     ///< Dim/Const/DType value; Param tensor name; Require condition; Layers/Experts range start
  ExprPtr value2;    ///< Layers/Experts: range end; Require: message
  TypeExpr type;     ///< Param/State
  /// Layers: its params and experts blocks; Experts (only inside layers: `experts e in 0..E {...}`):
  /// its params, each stacked over the experts into one param [E, ...].
  std::vector<Decl> body;
};

struct InputDecl {
  std::string name;
  Span span;
  TypeExpr type;
};

struct Forward {
  Span span;      ///< the `forward` keyword
  Span end_span;  ///< the closing brace
  std::vector<InputDecl> inputs;
  TypeExpr result;
  std::vector<Stmt> body;
  bool present = false;
};

struct Model {
  std::string name;
  Span span;
  std::vector<Decl> decls;
  Forward forward;
};

/// A pure function: params in, one tensor out; inlined at every call.
struct FnDecl {
  std::string name;
  Span span;
  std::vector<std::string> params;
  std::vector<Span> param_spans;
  std::vector<Stmt> body;  ///< `fn f(x) = e` is parsed as a body of one Return
};

/// A name that a statement or declaration dropped at a syntax error would have bound (`x =
/// embed[tokens` with its ')' missing drops the statement, and the parser's resync may skip a
/// whole block), and where: from the dropped text to the end of the model or fn holding it.
struct DroppedName {
  std::string name;
  Span from, until;
};

/// One parsed file.
struct Module {
  std::vector<FnDecl> fns;
  std::vector<Model> models;
  std::vector<DroppedName> dropped;
  /// Whether `name` used at `at` may be one a dropped statement before it would have bound: its
  /// "unknown name" says nothing new (Elaborator::unknown_name). A use before the dropped text,
  /// or in another fn or model, is still unknown.
  bool dropped_before(const std::string& name, const Span& at) const {
    auto before = [](const Span& a, const Span& b) { return a.line < b.line || (a.line == b.line && a.col < b.col); };
    for (const DroppedName& d : dropped)
      if (d.name == name && d.from.file == at.file && before(d.from, at) && !before(d.until, at)) return true;
    return false;
  }
};

}  // namespace lg::lang
