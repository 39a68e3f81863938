// Evaluating expressions: names, config keys, constant folding, member access, indexing, calls.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "lang/elaborator.h"
#include "support/did_you_mean.h"

namespace lg::lang {

using K = Value::Kind;

Value Elaborator::err(const Span& span, const std::string& message) {
  std::vector<Diagnostic::Note> notes;
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
    if (it->fn) notes.push_back({it->call_span, "in fn '" + it->fn->name + "', inlined here"});
  diags_.error(span, message, std::move(notes));
  return Value::error();
}

Value Elaborator::eval(const Expr& e) {
  // Bounds on work and stack: inlining multiplies both, and an input must not be able to hang
  // or overflow the checker.
  if (++steps_ > opts_.max_nodes * 20 + 100000) throw TooLarge{};
  if (eval_depth_ == 0) too_deep_reported_ = false;  // a new statement
  if (eval_depth_ >= kMaxEvalDepth) {
    // Once per statement: the other operands at the bound (a call's arguments, its receiver)
    // would each say the same.
    if (too_deep_reported_) return Value::error();
    too_deep_reported_ = true;
    const bool in_fn = std::any_of(frames_.begin(), frames_.end(), [](const Frame& f) { return f.fn != nullptr; });
    return err(e.span, fmt::format("expression nested too deeply: more than {} levels{}", kMaxEvalDepth,
                                   in_fn ? " (through inlined fns)" : ""));
  }
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(eval_depth_);
  switch (e.kind) {
    // A literal out of range was reported by the lexer: an error value, so that the check that
    // uses it (a dim, a view size) does not report the clamped number a second time.
    case ExprKind::Int: return e.out_of_range ? Value::error() : Value::of_int(e.int_value);
    case ExprKind::Float: return e.out_of_range ? Value::error() : Value::of_float(e.float_value);
    case ExprKind::Bool: return Value::of_bool(e.bool_value);
    case ExprKind::String: return Value::of_str(e.text);
    case ExprKind::None: return Value::null();
    case ExprKind::Name: return lookup(e.text, e.span);
    case ExprKind::Config: return config_value(e, false);
    case ExprKind::Unary: return unary(e);
    case ExprKind::Binary: return binary_chain(e, false);
    case ExprKind::Ternary: {
      Value c = eval(*e.args[0]);
      if (c.is_error()) return c;
      if (c.kind != K::Bool)
        return err(e.args[0]->span, "the condition of '? :' must be a compile-time bool, found " + show(c) +
                                        " (for tensors use where(cond, a, b))");
      return eval(*e.args[c.b ? 1 : 2]);
    }
    case ExprKind::Member: return member(e);
    case ExprKind::Call: return call(e);
    case ExprKind::Index: return index(e);
    case ExprKind::Slice:
    case ExprKind::Ellipsis: return err(e.span, "a slice is only allowed inside [...]");
  }
  return Value::error();
}

Value Elaborator::eval_maybe_missing(const Expr& e) {
  if (e.kind == ExprKind::Config) return config_value(e, true);
  // `config.layer_types[l] ?? ...`: an absent or null array is none, as an absent key is.
  if (e.kind == ExprKind::Index && e.args[0]->kind == ExprKind::Config) {
    Value base = config_value(*e.args[0], true);
    if (base.kind == K::Null) return base;
  }
  if (e.kind == ExprKind::Binary && e.op == Tok::QuestionQuestion) return coalesce(e, true);
  if (e.kind == ExprKind::Name || e.kind == ExprKind::Member) {
    bool saved = allow_missing_;
    allow_missing_ = true;
    Value v = eval(e);
    allow_missing_ = saved;
    return v;
  }
  return eval(e);
}

// A left-associative chain (`a + b + c`, `a ?? b ?? c`, `a && b && c`) parses to a tree as deep as
// the chain is long, so its left spine is walked with a loop, innermost operator first: the depth
// bound (and the stack) then counts nesting, not the length of a chain. Each operator means what
// it always did: `??` takes its right side only when the left is none (and lets a missing config
// key or param be none on its left, and on its right when the `??` itself is on the left of
// another `??`), `&&`/`||` short-circuit and need bools, any other operator evaluates both sides.
Value Elaborator::binary_chain(const Expr& top, bool allow_missing) {
  std::vector<const Expr*> spine;  // top first
  const Expr* leaf = &top;
  while (leaf->kind == ExprKind::Binary) {
    spine.push_back(leaf);
    leaf = leaf->args[0].get();
  }
  Value v = spine.back()->op == Tok::QuestionQuestion ? eval_maybe_missing(*leaf) : eval(*leaf);
  for (size_t i = spine.size(); i-- > 0;) {
    const Expr& e = *spine[i];
    if (i > 0 && ++steps_ > opts_.max_nodes * 20 + 100000) throw TooLarge{};  // eval() counted the top
    if (e.op == Tok::QuestionQuestion) {
      if (v.kind != K::Null) continue;
      const bool missing_ok = i == 0 ? allow_missing : spine[i - 1]->op == Tok::QuestionQuestion;
      v = missing_ok ? eval_maybe_missing(*e.args[1]) : eval(*e.args[1]);
      continue;
    }
    if (e.op == Tok::AndAnd || e.op == Tok::OrOr) {
      if (v.is_error()) continue;
      if (v.kind != K::Bool) {
        v = err(e.args[0]->span, std::string("expected a bool before ") + tok_name(e.op) + ", found " + show(v));
        continue;
      }
      if (v.b == (e.op == Tok::OrOr)) continue;  // short-circuit
      Value b = eval(*e.args[1]);
      if (!b.is_error() && b.kind != K::Bool)
        b = err(e.args[1]->span, std::string("expected a bool after ") + tok_name(e.op) + ", found " + show(b));
      v = std::move(b);
      continue;
    }
    Value b = eval(*e.args[1]);
    v = binary(e.op, v, b, e);
  }
  return v;
}

Value Elaborator::coalesce(const Expr& e, bool allow_missing) { return binary_chain(e, allow_missing); }

Elaborator::ConfigLookup Elaborator::config_lookup(const Expr& e) {
  ConfigLookup r;
  const nlohmann::json* j = &config_;
  for (size_t k = 0; k < e.path.size(); ++k) {
    const std::string& part = e.path[k];
    if (!j->is_object()) {
      // `"rope_parameters": "x"`: a malformed config, not an absent key (which `??` would default
      // silently). Reported once per key: a program reads such an object at several places.
      r.failed = true;
      if (bad_config_steps_.insert(r.key).second)
        err(e.span, fmt::format("config key '{}' is {} {}, not an object: config.{}.{} cannot be read", r.key,
                                j->is_array() || j->is_object() ? "an" : "a", j->type_name(), r.key,
                                fmt::join(e.path.begin() + static_cast<std::ptrdiff_t>(k), e.path.end(), ".")));
      return r;
    }
    r.key += (r.key.empty() ? "" : ".") + part;
    const auto it = j->find(part);
    if (it == j->end()) {
      r.parent = j;
      return r;
    }
    if (it->is_null()) {
      r.null = true;
      r.null_leaf = k + 1 == e.path.size();
      return r;
    }
    j = &*it;
  }
  r.value = j;
  return r;
}

Value Elaborator::config_value(const Expr& e, bool allow_missing) {
  const ConfigLookup r = config_lookup(e);
  if (r.failed) return Value::error();
  if (r.value) return config_json_value(*r.value, r.key, e.span);
  if (allow_missing) return Value::null();
  std::string near;  // a typo of a key the object holds: "hiden_size"
  if (!r.null && r.parent) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : r.parent->items()) keys.push_back(k);
    const size_t dot = r.key.rfind('.');
    near = did_you_mean(dot == std::string::npos ? r.key : r.key.substr(dot + 1), std::move(keys));
  }
  return err(e.span, "config key '" + r.key + "' is " + (r.null ? "null" : "missing") +
                         " in config.json and has no default (write `config." + r.key + " ?? <default>`)" + near);
}

// has(config.a.b): whether config.json holds the key, whatever its value (null included). `??`
// cannot tell an absent key from a null one, and some config classes give them different meanings
// (MistralConfig: an absent sliding_window is 4096, a null one no window).
Value Elaborator::has(const Expr& e) {
  if (e.args.size() != 2 || !e.arg_names[0].empty())
    return err(e.span, "has takes one config key: has(config.key)");
  const Expr& key = *e.args[1];
  if (key.kind != ExprKind::Config) return err(key.span, "has's argument must be a config key (config.key)");
  const ConfigLookup r = config_lookup(key);
  if (r.failed) return Value::error();
  // A key under a null object is absent: `"rope_scaling": null` holds no factor.
  return Value::of_bool(r.value != nullptr || r.null_leaf);
}

Value Elaborator::config_json_value(const nlohmann::json& j, const std::string& key, const Span& span) {
  // A value keeps its key: a type error far from here (in a prelude fn) then names it.
  auto keyed = [&](Value v) {
    v.config_key = key;
    return v;
  };
  if (j.is_null()) return Value::null();
  if (j.is_boolean()) return keyed(Value::of_bool(j.get<bool>()));
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return err(span, "config key '" + key + "' is out of range");
    return keyed(Value::of_int(j.get<int64_t>()));
  }
  if (j.is_number()) return keyed(Value::of_float(j.get<double>()));
  if (j.is_string()) return keyed(Value::of_str(j.get<std::string>()));
  if (j.is_object()) return err(span, "config key '" + key + "' is an object, not a value (name one of its keys)");
  // An array (Gemma 3's layer_types): a value only to be indexed, config.layer_types[l].
  Value v;
  v.kind = K::Object;
  v.obj = &j;
  v.s = key;
  return v;
}

Value Elaborator::param_value(ParamSlot& p, const Span& span) {
  if (!p.ok) return Value::error();
  if (p.absent) {
    if (allow_missing_) return Value::null();
    return err(span, "param '" + p.name + "' is absent for this config (its tensor name is none)");
  }
  if (frames_.empty()) return err(span, "param '" + p.name + "' is a tensor; declarations can only use compile-time values");
  if (p.node < 0) {
    // Params bound to one tensor (a tied head) share one Param node.
    if (auto it = param_nodes_.find(p.index); it != param_nodes_.end()) {
      p.node = it->second;
      return Value::tensor(p.node, p.dtype, p.shape);
    }
    const ir::ParamInfo& info = g_.params[static_cast<size_t>(p.index)];
    ir::Attrs a;
    a.index = p.index;
    Span saved = stmt_span_;
    std::string saved_name = stmt_name_;
    stmt_span_ = p.span;
    stmt_name_ = p.name;
    p.node = emit(ir::Op::Param, info.dtype, info.shape, {}, a);
    param_nodes_[p.index] = p.node;
    stmt_span_ = saved;
    stmt_name_ = saved_name;
  }
  return Value::tensor(p.node, p.dtype, p.shape);
}

Value Elaborator::state_value(StateSlot& s) {
  if (!s.ok) return Value::error();
  if (s.version < 0) {
    ir::Attrs a;
    a.index = s.index;
    Span saved = stmt_span_;
    stmt_span_ = s.span;
    s.version = emit(ir::Op::State, s.dtype, s.shape, {}, a);
    g_.nodes[static_cast<size_t>(s.version)].name = s.name;
    stmt_span_ = saved;
  }
  return Value::tensor(s.version, s.dtype, s.shape);
}

Value Elaborator::lookup(const std::string& name, const Span& span) {
  if (!frames_.empty()) {
    auto& vars = frames_.back().vars;
    auto it = vars.find(name);
    if (it != vars.end()) return it->second;
  }
  if (auto t = resolve_dtype(name); t && (globals_.find(name) == globals_.end() || globals_[name].kind == K::DType))
    return Value::of_dtype(*t);
  bool in_fn = !frames_.empty() && frames_.back().fn;
  bool is_model_name = globals_.count(name) || params_.count(name) || states_.count(name);
  if (in_fn) {
    if (is_model_name)
      return err(span, "fn '" + frames_.back().fn->name + "' uses '" + name +
                           "' of the model: fns are pure, pass it as an argument");
    return unknown_name(span, name);
  }
  if (auto it = globals_.find(name); it != globals_.end()) return it->second;
  if (auto it = params_.find(name); it != params_.end()) return param_value(it->second, span);
  if (auto it = states_.find(name); it != states_.end()) {
    if (frames_.empty()) return err(span, "state '" + name + "' is a tensor; declarations can only use compile-time values");
    return state_value(it->second);
  }
  if (p_.fns.count(name) || is_primitive(name)) return err(span, "'" + name + "' is a function: call it with (...)");
  return unknown_name(span, name);
}

Value Elaborator::unary(const Expr& e) {
  Value v = eval(*e.args[0]);
  if (v.is_error()) return v;
  if (e.op == Tok::Not) {
    if (v.kind != K::Bool) return err(e.span, "'!' needs a bool, found " + show(v));
    return Value::of_bool(!v.b);
  }
  if (v.kind == K::Int) {
    if (v.i == INT64_MIN) return err(e.span, "integer overflow");
    return Value::of_int(-v.i);
  }
  if (v.kind == K::Float) return Value::of_float(-v.f);
  if (v.kind == K::Tensor) {
    if (v.dtype == DType::Bool) return err(e.span, "'-' needs a number, found " + show(v));
    return emit_value(ir::Op::Neg, v.dtype, v.shape, {v.id});
  }
  return err(e.span, "'-' needs a number or tensor, found " + show(v));
}

Value Elaborator::binary(Tok op, const Value& a, const Value& b, const Expr& e) {
  if (a.is_error() || b.is_error()) return Value::error();
  // The layer index is an integer in arithmetic and comparisons (`(l + 1) % 6 != 0`).
  if (a.kind == K::Layer || b.kind == K::Layer)
    return binary(op, a.kind == K::Layer ? Value::of_int(a.i) : a, b.kind == K::Layer ? Value::of_int(b.i) : b, e);
  // A tensor is never none: `(l.router ?? none) != none` asks whether a param is present.
  if ((op == Tok::Eq || op == Tok::Ne) && ((a.is_tensor() && b.kind == K::Null) || (a.kind == K::Null && b.is_tensor())))
    return Value::of_bool(op == Tok::Ne);
  if (a.is_tensor() || b.is_tensor()) return tensor_binary(op, a, b, e);
  return fold(op, a, b, e);
}

Value Elaborator::fold(Tok op, const Value& a, const Value& b, const Expr& e) {
  auto bad = [&]() {
    return err(e.span, std::string("operator ") + tok_name(op) + " cannot combine " + show(a) + " and " + show(b));
  };
  bool cmp = op == Tok::Eq || op == Tok::Ne || op == Tok::Lt || op == Tok::Le || op == Tok::Gt || op == Tok::Ge;
  if (a.kind == K::Str && b.kind == K::Str) {
    if (op == Tok::Eq) return Value::of_bool(a.s == b.s);
    if (op == Tok::Ne) return Value::of_bool(a.s != b.s);
    if (op == Tok::Plus && a.s.size() + b.s.size() < 4096) return Value::of_str(a.s + b.s);
    return bad();
  }
  if ((a.kind == K::Bool && b.kind == K::Bool) || (a.kind == K::DType && b.kind == K::DType)) {
    bool eq = a.kind == K::Bool ? a.b == b.b : a.dtype == b.dtype;
    if (op == Tok::Eq) return Value::of_bool(eq);
    if (op == Tok::Ne) return Value::of_bool(!eq);
    return bad();
  }
  if (a.kind == K::Null || b.kind == K::Null) {
    if (op == Tok::Eq) return Value::of_bool(a.kind == b.kind);
    if (op == Tok::Ne) return Value::of_bool(a.kind != b.kind);
    return bad();
  }
  if (a.kind == K::Dim || b.kind == K::Dim) {
    // A runtime dim may only be scaled by a constant: shapes stay of the form c*T.
    if (op == Tok::Star && (a.kind == K::Int || b.kind == K::Int)) {
      const Value& d = a.kind == K::Dim ? a : b;
      int64_t c = a.kind == K::Int ? a.i : b.i;
      int64_t out;
      if (c <= 0 || __builtin_mul_overflow(d.dim.coeff, c, &out) || out > kMaxDim)
        return err(e.span, "runtime dim " + format_dim(d.dim, sym_names_) + " scaled by " + std::to_string(c) + " is out of range");
      return Value::of_dim(ir::Dim::symbol(d.dim.sym, out));
    }
    return err(e.span, std::string("operator ") + tok_name(op) + " cannot combine " + show(a) + " and " + show(b) +
                           ": a runtime dim can only be multiplied by a positive constant");
  }
  if (!a.is_number() || !b.is_number()) return bad();
  if (a.kind == K::Int && b.kind == K::Int) {
    int64_t x = a.i, y = b.i, r = 0;
    switch (op) {
      case Tok::Plus: if (__builtin_add_overflow(x, y, &r)) return err(e.span, "integer overflow"); return Value::of_int(r);
      case Tok::Minus: if (__builtin_sub_overflow(x, y, &r)) return err(e.span, "integer overflow"); return Value::of_int(r);
      case Tok::Star: if (__builtin_mul_overflow(x, y, &r)) return err(e.span, "integer overflow"); return Value::of_int(r);
      case Tok::SlashSlash:
      case Tok::Percent: {
        if (y == 0) return err(e.span, "division by zero");
        if (x == INT64_MIN && y == -1) return err(e.span, "integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {  // floor semantics, as Python
          --q;
          m += y;
        }
        return Value::of_int(op == Tok::SlashSlash ? q : m);
      }
      case Tok::StarStar:
        if (y >= 0) {
          // Python's int ** int >= 0. The powers of 0, 1 and -1 never grow, so they are closed
          // forms (a loop over y up to 2^63 would not end; (-1) ** y alternates in sign); any
          // other base overflows within 63 multiplications.
          if (x == 0) return Value::of_int(y == 0 ? 1 : 0);
          if (x == 1) return Value::of_int(1);
          if (x == -1) return Value::of_int(y % 2 == 0 ? 1 : -1);
          int64_t acc = 1;
          for (int64_t k = 0; k < y; ++k)
            if (__builtin_mul_overflow(acc, x, &acc)) return err(e.span, "integer overflow");
          return Value::of_int(acc);
        }
        break;
      case Tok::Eq: return Value::of_bool(x == y);
      case Tok::Ne: return Value::of_bool(x != y);
      case Tok::Lt: return Value::of_bool(x < y);
      case Tok::Le: return Value::of_bool(x <= y);
      case Tok::Gt: return Value::of_bool(x > y);
      case Tok::Ge: return Value::of_bool(x >= y);
      default: break;
    }
  }
  double x = a.as_double(), y = b.as_double(), r = 0;
  switch (op) {
    case Tok::Plus: r = x + y; break;
    case Tok::Minus: r = x - y; break;
    case Tok::Star: r = x * y; break;
    case Tok::Slash:
      if (y == 0) return err(e.span, "division by zero");
      r = x / y;
      break;
    case Tok::SlashSlash:
      if (y == 0) return err(e.span, "division by zero");
      r = std::floor(x / y);
      break;
    case Tok::Percent:
      if (y == 0) return err(e.span, "division by zero");
      r = x - y * std::floor(x / y);
      break;
    case Tok::StarStar: r = std::pow(x, y); break;
    case Tok::Eq: return Value::of_bool(x == y);
    case Tok::Ne: return Value::of_bool(x != y);
    case Tok::Lt: return Value::of_bool(x < y);
    case Tok::Le: return Value::of_bool(x <= y);
    case Tok::Gt: return Value::of_bool(x > y);
    case Tok::Ge: return Value::of_bool(x >= y);
    case Tok::At: return err(e.span, "'@' needs tensors, found " + show(a) + " and " + show(b));
    default: return bad();
  }
  (void)cmp;
  if (!std::isfinite(r)) return err(e.span, "constant expression is not finite");
  return Value::of_float(r);
}

Value Elaborator::member(const Expr& e) {
  Value self = eval(*e.args[0]);
  if (self.is_error()) return self;
  const std::string& f = e.text;
  if (self.kind == K::Layer) {
    auto& layer = layer_params_[static_cast<size_t>(self.i - layer_lo_)];
    auto it = layer.find(f);
    if (it == layer.end()) {
      std::vector<std::string> names;
      for (const auto& [n, p] : layer) names.push_back(n);
      return err(e.span, "layers have no param '" + f + "'" + did_you_mean(f, std::move(names)));
    }
    return param_value(it->second, e.span);
  }
  if (self.kind == K::Tensor) {
    if (f == "T") {
      if (self.shape.size() != 2)
        return err(e.span, "wrong rank: .T needs a rank-2 tensor, found " + show(self) + " (use transpose(a, b))");
      ir::Attrs a;
      a.perm = {1, 0};
      return emit_value(ir::Op::Permute, self.dtype, {self.shape[1], self.shape[0]}, {self.id}, a);
    }
    if (f == "shape") {
      Value s;
      s.kind = K::Shape;
      s.shape = self.shape;
      return s;
    }
    if (f == "dtype") return Value::of_dtype(self.dtype);
    if (f == "rank") return Value::of_int(static_cast<int64_t>(self.shape.size()));
    return err(e.span, "tensors have no field '" + f + "' (methods are called: x." + f + "(...))");
  }
  return err(e.span, show(self) + " has no field '" + f + "'");
}

Value Elaborator::index(const Expr& e) {
  Value base = eval(*e.args[0]);
  if (base.is_error()) return base;
  if (base.kind == K::Shape) return index_shape(base, e);
  if (base.kind == K::Object && base.obj && base.obj->is_array()) return index_config_array(base, e);
  if (base.kind != K::Tensor) return err(e.args[0]->span, "cannot index " + show(base));
  return index_tensor(base, e);
}

namespace {

// A shape and a config array are compile-time lists that no model slices: one plain index only.
bool one_plain_index(const Expr& e) {
  return e.args.size() == 2 && e.args[1]->kind != ExprKind::Slice && e.args[1]->kind != ExprKind::Ellipsis;
}

}  // namespace

Value Elaborator::index_shape(const Value& base, const Expr& e) {
  if (!one_plain_index(e)) return err(e.span, "a shape is indexed by one integer");
  Value k = eval(*e.args[1]);
  if (k.is_error()) return k;
  if (k.kind != K::Int) return err(e.args[1]->span, "expected an integer index, found " + show(k));
  auto ax = norm_axis(k.i, base.shape.size(), e.args[1]->span);
  if (!ax) return Value::error();
  return Value::of_dim(base.shape[static_cast<size_t>(*ax)]);
}

Value Elaborator::index_config_array(const Value& base, const Expr& e) {
  if (!one_plain_index(e)) return err(e.span, "a config array is indexed by one integer");
  Value k = eval(*e.args[1]);
  if (k.is_error()) return k;
  if (k.kind != K::Int && k.kind != K::Layer)
    return err(e.args[1]->span, "expected an integer index, found " + show(k));
  const auto n = static_cast<int64_t>(base.obj->size());
  if (k.i < 0 || k.i >= n)
    return err(e.args[1]->span, fmt::format("index {} is out of range for config key '{}' of {} entries", k.i, base.s, n));
  return config_json_value((*base.obj)[static_cast<size_t>(k.i)], fmt::format("{}[{}]", base.s, k.i), e.span);
}

Value Elaborator::index_tensor(const Value& base, const Expr& e) {
  const size_t n_items = e.args.size() - 1;
  std::vector<IndexItem> items;
  bool ok = true;
  for (size_t k = 1; k <= n_items; ++k) {
    const Expr& x = *e.args[k];
    if (x.kind == ExprKind::Ellipsis) {
      items.push_back({IndexItem::Ellipsis, 0, {}, {}, 1, x.span});
      continue;
    }
    if (x.kind == ExprKind::Slice) {
      if (auto it = slice_item(x))
        items.push_back(*it);
      else
        ok = false;
      continue;
    }
    Value v = eval(x);
    if (v.is_error()) {
      ok = false;
      continue;
    }
    if (v.kind == K::Tensor) {
      if (n_items != 1)
        return err(x.span, "indexing by a tensor is a gather and must be the only index: table[idx]");
      return gather(base, v, e);
    }
    if (v.kind == K::Int || v.kind == K::Layer) {
      items.push_back({IndexItem::Int, v.i, {}, {}, 1, x.span});
      continue;
    }
    err(x.span, "expected an integer, slice or index tensor, found " + show(v));
    ok = false;
  }
  if (!ok) return Value::error();
  auto per_axis = index_per_axis(items, base, e);
  if (!per_axis) return Value::error();
  return slice_axes(base, *per_axis);
}

std::optional<Elaborator::IndexItem> Elaborator::slice_item(const Expr& x) {
  IndexItem it{IndexItem::Slice, 0, {}, {}, 1, x.span};
  bool ok = true;
  for (int part = 0; part < 3; ++part) {
    if (!x.args[static_cast<size_t>(part)]) continue;
    Value v = eval(*x.args[static_cast<size_t>(part)]);
    if (v.is_error()) {
      ok = false;
      continue;
    }
    if (v.kind != K::Int) {
      err(x.args[static_cast<size_t>(part)]->span, "slice bounds must be compile-time integers, found " + show(v));
      ok = false;
      continue;
    }
    if (part == 0) it.start = v.i;
    if (part == 1) it.stop = v.i;
    if (part == 2) it.step = v.i;
  }
  if (it.step <= 0) {
    err(x.span, "slice step must be positive");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return it;
}

std::optional<std::vector<Elaborator::IndexItem>> Elaborator::index_per_axis(const std::vector<IndexItem>& items,
                                                                              const Value& base, const Expr& e) {
  const size_t rank = base.shape.size();
  size_t ellipses = 0, explicit_axes = 0;
  for (auto& it : items) (it.kind == IndexItem::Ellipsis ? ellipses : explicit_axes)++;
  if (ellipses > 1) {
    err(e.span, "at most one '...' in an index");
    return std::nullopt;
  }
  if (explicit_axes > rank) {
    err(e.span, fmt::format("too many indices: {} for {}", explicit_axes, show(base)));
    return std::nullopt;
  }
  std::vector<IndexItem> per_axis;
  for (auto& it : items) {
    if (it.kind == IndexItem::Ellipsis) {
      for (size_t k = 0; k < rank - explicit_axes; ++k) per_axis.push_back({IndexItem::Slice, 0, {}, {}, 1, it.span});
    } else {
      per_axis.push_back(it);
    }
  }
  while (per_axis.size() < rank) per_axis.push_back({IndexItem::Slice, 0, {}, {}, 1, e.span});
  return per_axis;
}

Value Elaborator::slice_axes(const Value& base, const std::vector<IndexItem>& per_axis) {
  const size_t rank = base.shape.size();
  ir::ValueId cur = base.id;
  ir::Shape shape = base.shape;
  ir::Shape kept;
  bool dropped = false;
  for (size_t ax = 0; ax < rank; ++ax) {
    const IndexItem& it = per_axis[ax];
    ir::Dim d = shape[ax];
    bool full = it.kind == IndexItem::Slice && !it.start && !it.stop && it.step == 1;
    if (full) {
      kept.push_back(d);
      continue;
    }
    if (!d.is_const())
      return err(it.span, "cannot index the runtime dim " + format_dim(d, sym_names_) + " with constants (only ':' is allowed on it)");
    int64_t n = d.coeff, start, stop, step = 1;
    if (it.kind == IndexItem::Int) {
      int64_t k = it.a < 0 ? it.a + n : it.a;
      if (k < 0 || k >= n) return err(it.span, fmt::format("index {} is out of range for a dim of size {}", it.a, n));
      start = k;
      stop = k + 1;
      dropped = true;
    } else {
      auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
      start = it.start ? clampi(*it.start) : 0;
      stop = it.stop ? clampi(*it.stop) : n;
      step = it.step;
      if (stop <= start) {
        // The bounds given ("100:"), and where Python's clamping took them if it did: a tensor
        // has no zero-size dims here.
        const std::string given = (it.start ? std::to_string(*it.start) : "") + ":" + (it.stop ? std::to_string(*it.stop) : "");
        const bool clamped = (it.start && *it.start != start) || (it.stop && *it.stop != stop);
        return err(it.span, fmt::format("empty slice {} of a dim of size {}{}; a dim of size 0 is an error here", given, n,
                                        clamped ? fmt::format(" (clamped to {}:{})", start, stop) : std::string()));
      }
    }
    int64_t len = ir::slice_length(start, stop, step);
    ir::Attrs a;
    a.axis = static_cast<int32_t>(ax);
    a.start = start;
    a.stop = stop;
    a.step = step;
    shape[ax] = ir::Dim::constant(len);
    cur = emit(ir::Op::Slice, base.dtype, shape, {cur}, a);
    if (it.kind != IndexItem::Int) kept.push_back(shape[ax]);
  }
  if (dropped) cur = reshape(cur, kept);
  return Value::tensor(cur, base.dtype, dropped ? kept : shape);
}

Value Elaborator::call(const Expr& e) {
  const Expr& callee = *e.args[0];
  // contains(config.list, v) reads the list itself: a config list is no value of the language.
  // has(config.key) asks about the key itself, not its value.
  if (callee.kind == ExprKind::Name && (callee.text == "contains" || callee.text == "has") &&
      !p_.fns.count(callee.text) && (frames_.empty() || !frames_.back().vars.count(callee.text)))
    return callee.text == "has" ? has(e) : contains(e);
  std::vector<Arg> args;
  bool failed = false;
  bool seen_kw = false;
  for (size_t k = 1; k < e.args.size(); ++k) {
    const std::string& kw = e.arg_names[k - 1];
    if (kw.empty() && seen_kw) {
      err(e.args[k]->span, "positional argument after a keyword argument");
      failed = true;
    }
    // As Python: a repeated keyword was taken as its last value, silently.
    if (!kw.empty() && std::find(e.arg_names.begin(), e.arg_names.begin() + static_cast<std::ptrdiff_t>(k - 1), kw) !=
                           e.arg_names.begin() + static_cast<std::ptrdiff_t>(k - 1)) {
      err(e.args[k]->span, "keyword argument '" + kw + "' repeated");
      failed = true;
    }
    seen_kw = seen_kw || !kw.empty();
    Value v = eval(*e.args[k]);
    failed = failed || v.is_error();
    args.push_back({kw, std::move(v), e.args[k]->span});
  }
  if (callee.kind == ExprKind::Member) {
    Value self = eval(*callee.args[0]);
    if (self.is_error() || failed) return Value::error();
    return call_method(self, callee.text, args, e);
  }
  if (callee.kind != ExprKind::Name) return err(callee.span, "this expression cannot be called");
  const std::string& name = callee.text;
  bool local = !frames_.empty() && frames_.back().vars.count(name);
  if (!local) {
    if (auto it = p_.fns.find(name); it != p_.fns.end()) {
      if (failed) return Value::error();
      return call_fn(*it->second, args, e);
    }
    if (is_primitive(name)) {
      if (failed) return Value::error();
      return call_primitive(name, args, e);
    }
  }
  if (local || globals_.count(name) || params_.count(name) || states_.count(name))
    return err(callee.span, "'" + name + "' is not a function");
  return err(callee.span, "unknown function '" + name + "'" + did_you_mean(name, p_.function_names()));
}

Value Elaborator::call_fn(const FnDecl& fn, const std::vector<Arg>& args, const Expr& call) {
  if (p_.recursive.count(fn.name)) return Value::error();  // reported where the cycle closes
  if (frames_.size() > 64) return err(call.span, "fns nested more than 64 calls deep");
  for (const auto& a : args)
    if (!a.name.empty()) return err(a.span, "fn '" + fn.name + "' takes positional arguments only");
  if (args.size() != fn.params.size())
    return err(call.span, fmt::format("fn '{}' takes {} argument{}, found {}", fn.name, fn.params.size(),
                                      fn.params.size() == 1 ? "" : "s", args.size()));
  Frame f;
  f.fn = &fn;
  f.call_span = call.span;
  for (size_t k = 0; k < args.size(); ++k) f.vars[fn.params[k]] = args[k].value;
  frames_.push_back(std::move(f));
  Value out = exec_block(fn.body, false);
  frames_.pop_back();
  return out;
}

}  // namespace lg::lang
