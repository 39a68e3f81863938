// The primitives of the language (elementwise math, reductions, softmax, matmul, gather, views,
// concat, arange, attention) and the IR emission helpers that make casts and broadcasts explicit.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>

#include "lang/elaborator.h"
#include "support/did_you_mean.h"

namespace lg::lang {

using K = Value::Kind;

namespace {

/// The unary ops .lg calls by name (`exp(x)`, `erf(x)`): those the op table (src/ir/ops.def)
/// flags kLangFn.
const std::unordered_map<std::string, ir::Op>& unary_ops() {
  static const std::unordered_map<std::string, ir::Op> m = [] {
    std::unordered_map<std::string, ir::Op> r;
    const auto ops = ir::all_ops();
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].group == ir::OpGroup::Unary && (ops[i].flags & ir::kLangFn)) r.emplace(ops[i].name, static_cast<ir::Op>(i));
    return r;
  }();
  return m;
}

/// The dtype two operands meet at: equal dtypes stay; two different floats widen to f32
/// (bf16 and f16 each convert exactly to f32); anything else has no common dtype.
std::optional<DType> common_dtype(DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) && is_float(b)) return DType::F32;
  return std::nullopt;
}

/// Element count of a shape as coeff * sym^power (at most one runtime symbol).
struct Count {
  int64_t coeff = 1;
  int power = 0;
  int32_t sym = -1;
  bool ok = true;
};
Count count_of(const ir::Shape& s) {
  Count c;
  for (const auto& d : s) {
    if (__builtin_mul_overflow(c.coeff, d.coeff, &c.coeff)) c.ok = false;
    if (!d.is_const()) {
      if (c.sym >= 0 && c.sym != d.sym) c.ok = false;
      c.sym = d.sym;
      ++c.power;
    }
  }
  return c;
}

}  // namespace

namespace {
const std::set<std::string_view>& primitive_set() {
  static const std::set<std::string_view> names = [] {
    std::set<std::string_view> r = {"where", "sum", "mean", "max", "softmax", "concat", "arange", "attention",
                                      "topk", "moe", "contains", "has"};
    r.insert("int");  // compile-time numbers only
    for (const ir::OpInfo& op : ir::all_ops())
      if (op.flags & ir::kLangFn) r.insert(op.name);  // exp, ..., maximum, minimum
    return r;
  }();
  return names;
}
}  // namespace

bool is_primitive(std::string_view name) { return primitive_set().count(name) > 0; }

std::vector<std::string> primitive_names() {
  return std::vector<std::string>(primitive_set().begin(), primitive_set().end());
}

// ---- IR emission

ir::ValueId Elaborator::emit(ir::Op op, DType dtype, ir::Shape shape, std::vector<ir::ValueId> operands, ir::Attrs attrs) {
  if (static_cast<int64_t>(g_.nodes.size()) >= opts_.max_nodes) throw TooLarge{};
  ir::Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.operands = std::move(operands);
  n.attrs = std::move(attrs);
  n.span = {stmt_span_.file, stmt_span_.line, stmt_span_.col, stmt_span_.end_line, stmt_span_.end_col};
  n.name = stmt_name_;
  return g_.add(std::move(n));
}

Value Elaborator::emit_value(ir::Op op, DType dtype, ir::Shape shape, std::vector<ir::ValueId> operands, ir::Attrs attrs) {
  ir::Shape s = shape;
  return Value::tensor(emit(op, dtype, std::move(shape), std::move(operands), std::move(attrs)), dtype, std::move(s));
}

ir::ValueId Elaborator::cast(ir::ValueId v, DType to) {
  const ir::Node& n = g_.at(v);
  if (n.dtype == to) return v;
  ir::Shape s = n.shape;
  return emit(ir::Op::Cast, to, std::move(s), {v});
}

ir::ValueId Elaborator::reshape(ir::ValueId v, ir::Shape shape) {
  if (g_.at(v).shape == shape) return v;
  DType t = g_.at(v).dtype;
  return emit(ir::Op::Reshape, t, std::move(shape), {v});
}

ir::ValueId Elaborator::scalar_const(double value, DType dtype, size_t rank) {
  ir::Attrs a;
  a.scalar = value;
  ir::ValueId c = emit(ir::Op::Const, dtype, {}, {}, a);
  return rank == 0 ? c : reshape(c, ir::Shape(rank, ir::Dim::constant(1)));
}

ir::ValueId Elaborator::to_rank(ir::ValueId v, size_t rank) {
  ir::Shape s = g_.at(v).shape;
  if (s.size() >= rank) return v;
  s.insert(s.begin(), rank - s.size(), ir::Dim::constant(1));
  return reshape(v, std::move(s));
}

std::optional<ir::Shape> Elaborator::broadcast_shape(const ir::Shape& a, const ir::Shape& b, const std::string& what,
                                                     const Span& span) {
  size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    // Right-aligned, as numpy: missing leading dims count as 1.
    ir::Dim x = k + a.size() >= rank ? a[k + a.size() - rank] : ir::Dim::constant(1);
    ir::Dim y = k + b.size() >= rank ? b[k + b.size() - rank] : ir::Dim::constant(1);
    if (x == y || y == ir::Dim::constant(1)) {
      out[k] = x;
    } else if (x == ir::Dim::constant(1)) {
      out[k] = y;
    } else {
      err(span, "shape mismatch in " + what + ": " + show(a) + " and " + show(b) + " do not broadcast (" +
                    format_dim(x, sym_names_) + " vs " + format_dim(y, sym_names_) + ")");
      return std::nullopt;
    }
  }
  return out;
}

std::optional<int64_t> Elaborator::norm_axis(int64_t axis, size_t rank, const Span& span) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    err(span, fmt::format("axis {} is out of range for rank {}", axis, rank));
    return std::nullopt;
  }
  return axis < 0 ? axis + r : axis;
}

// ---- elementwise

Value Elaborator::tensor_binary(Tok op, const Value& a, const Value& b, const Expr& e, const std::string& what) {
  if (op == Tok::At) return matmul(a, b, e);
  ir::Op iop;
  switch (op) {
    case Tok::Plus: iop = ir::Op::Add; break;
    case Tok::Minus: iop = ir::Op::Sub; break;
    case Tok::Star: iop = ir::Op::Mul; break;
    case Tok::Slash: iop = ir::Op::Div; break;
    case Tok::StarStar: iop = ir::Op::Pow; break;
    case Tok::Eq: iop = ir::Op::Eq; break;
    case Tok::Ne: iop = ir::Op::Ne; break;
    case Tok::Lt: iop = ir::Op::Lt; break;
    case Tok::Le: iop = ir::Op::Le; break;
    case Tok::Gt: iop = ir::Op::Gt; break;
    case Tok::Ge: iop = ir::Op::Ge; break;
    default:
      return err(e.span, std::string("operator ") + tok_name(op) + " is not defined for tensors (" + show(a) + ", " + show(b) + ")");
  }
  {
    bool cmp = iop == ir::Op::Eq || iop == ir::Op::Ne || iop == ir::Op::Lt || iop == ir::Op::Le || iop == ir::Op::Gt ||
               iop == ir::Op::Ge;
    std::string opname = what.empty() ? tok_name(op) : what;
    // Operand dtypes: a tensor's own; a compile-time number adopts the tensor's dtype (a weak
    // scalar, as in torch), if it fits (an int constant fits any number dtype, a float constant
    // only a float one).
    auto scalar_fits = [&](const Value& s, DType t) {
      if (s.kind == K::Int) return t != DType::Bool;
      if (s.kind == K::Float) return is_float(t);
      return false;
    };
    DType dt;
    if (a.is_tensor() && b.is_tensor()) {
      auto c = common_dtype(a.dtype, b.dtype);
      if (!c)
        return err(e.span, "dtype mismatch in " + opname + ": " + show(a) + " and " + show(b) +
                               " (cast one with .to(dtype))");
      dt = *c;
    } else {
      const Value& t = a.is_tensor() ? a : b;
      const Value& s = a.is_tensor() ? b : a;
      if (s.kind != K::Int && s.kind != K::Float)
        return err(e.span, "operator " + opname + " cannot combine " + show(a) + " and " + show(b));
      if (!scalar_fits(s, t.dtype))
        return err(e.span, "dtype mismatch in " + opname + ": " + show(a) + " and " + show(b) +
                               " (cast the tensor with .to(f32))");
      // The constant becomes an i32 Const: torch refuses a Python int it cannot convert ("value
      // cannot be converted to type int32_t without overflow") rather than wrap it.
      if (t.dtype == DType::I32 && (s.i < std::numeric_limits<int32_t>::min() || s.i > std::numeric_limits<int32_t>::max()))
        return err(e.span, fmt::format("integer constant {} is outside the i32 range of {} in {}", s.i, show(t), opname));
      dt = t.dtype;
    }
    if (dt == DType::Bool && !(iop == ir::Op::Eq || iop == ir::Op::Ne))
      return err(e.span, "dtype mismatch in " + opname + ": bool tensors in arithmetic (" + show(a) + ", " + show(b) + ")");
    if (dt == DType::I32 && (iop == ir::Op::Div || iop == ir::Op::Pow))
      return err(e.span, "operator " + opname + " on i32 tensors: cast to a float dtype first with .to(f32)");
    size_t rank = std::max(a.is_tensor() ? a.shape.size() : 0, b.is_tensor() ? b.shape.size() : 0);
    auto operand = [&](const Value& v) {
      if (v.is_tensor()) return to_rank(cast(v.id, dt), rank);
      return scalar_const(v.as_double(), dt, rank);
    };
    ir::Shape sa = a.is_tensor() ? a.shape : ir::Shape{};
    ir::Shape sb = b.is_tensor() ? b.shape : ir::Shape{};
    auto out = broadcast_shape(sa, sb, opname, e.span);
    if (!out) return Value::error();
    ir::ValueId x = operand(a), y = operand(b);
    return emit_value(iop, cmp ? DType::Bool : dt, *out, {x, y});
  }
}

Value Elaborator::unary_math(ir::Op op, const std::string& name, const Value& x, const Expr& e) {
  if (x.is_number()) {
    double r = ir::host_eval(op, x.as_double());
    if (!std::isfinite(r)) return err(e.span, name + " of " + show(x) + " is not finite");
    return Value::of_float(r);
  }
  if (!x.is_tensor()) return err(e.span, name + " needs a tensor or number, found " + show(x));
  if (op == ir::Op::Abs && x.dtype == DType::I32) return emit_value(op, x.dtype, x.shape, {x.id});
  if (!is_float(x.dtype)) return err(e.span, name + " needs a float tensor, found " + show(x));
  return emit_value(op, x.dtype, x.shape, {x.id});
}

Value Elaborator::matmul(const Value& a, const Value& b, const Expr& e) {
  if (!a.is_tensor() || !b.is_tensor()) return err(e.span, "'@' needs tensors on both sides, found " + show(a) + " and " + show(b));
  if (a.shape.size() < 2 || b.shape.size() < 2)
    return err(e.span, "wrong rank: '@' needs operands of rank 2 or more, found " + show(a) + " @ " + show(b));
  auto dt = common_dtype(a.dtype, b.dtype);
  if (!dt || !is_float(*dt)) return err(e.span, "dtype mismatch in '@': " + show(a) + " @ " + show(b) + " (needs float tensors)");
  ir::Dim k1 = a.shape[a.shape.size() - 1], k2 = b.shape[b.shape.size() - 2];
  if (!(k1 == k2))
    return err(e.span, "shape mismatch in '@': " + show(a.shape) + " @ " + show(b.shape) + ": inner dims " +
                           format_dim(k1, sym_names_) + " and " + format_dim(k2, sym_names_) + " differ");
  ir::Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcast_shape(ba, bb, "the batch dims of '@'", e.span);
  if (!batch) return Value::error();
  ir::ValueId x = cast(a.id, *dt), y = cast(b.id, *dt);
  // The IR lets b be rank 2 against any a; otherwise both get the same rank.
  if (b.shape.size() > 2) {
    size_t r = std::max(a.shape.size(), b.shape.size());
    x = to_rank(x, r);
    y = to_rank(y, r);
  }
  ir::Shape out = *batch;
  out.push_back(a.shape[a.shape.size() - 2]);
  out.push_back(b.shape[b.shape.size() - 1]);
  return emit_value(ir::Op::MatMul, *dt, out, {x, y});
}

// ---- reductions

Value Elaborator::reduce(ir::Op op, const std::string& name, const Value& x, int64_t axis, bool keepdim, const Expr& e) {
  auto ax = norm_axis(axis, x.shape.size(), e.span);
  if (!ax) return Value::error();
  if (x.dtype == DType::Bool) return err(e.span, name + " needs a number tensor, found " + show(x));
  if (name == "mean" && !is_float(x.dtype)) return err(e.span, "mean needs a float tensor, found " + show(x));
  ir::Dim d = x.shape[static_cast<size_t>(*ax)];
  if (name == "mean" && !d.is_const())
    return err(e.span, "mean over the runtime dim " + format_dim(d, sym_names_) + " is not supported");
  ir::Shape out = x.shape;
  if (keepdim) out[static_cast<size_t>(*ax)] = ir::Dim::constant(1);
  else out.erase(out.begin() + *ax);
  ir::Attrs a;
  a.axis = static_cast<int32_t>(*ax);
  a.keepdim = keepdim;
  Value r = emit_value(op, x.dtype, out, {x.id}, a);
  if (name != "mean") return r;
  // mean = sum * (1/n): one reduction primitive, and a constant the executor folds.
  ir::ValueId c = scalar_const(1.0 / static_cast<double>(d.coeff), x.dtype, out.size());
  return emit_value(ir::Op::Mul, x.dtype, out, {r.id, c});
}

// ---- views

Value Elaborator::view(const Value& x, const std::vector<Arg>& dims, const Expr& e) {
  ir::Shape out;
  int infer = -1;
  for (size_t k = 0; k < dims.size(); ++k) {
    const Value& d = dims[k].value;
    if (d.kind == K::Int && d.i == -1 && infer < 0) {
      infer = static_cast<int>(k);
      out.push_back(ir::Dim::constant(1));
    } else if (d.kind == K::Int && d.i > 0 && d.i <= kMaxDim) {
      out.push_back(ir::Dim::constant(d.i));
    } else if (d.kind == K::Dim) {
      out.push_back(d.dim);
    } else {
      return err(dims[k].span, "view dims must be positive integers, runtime dims or one -1, found " + show(d));
    }
  }
  if (out.empty()) return err(e.span, "view needs at least one dim");
  Count cin = count_of(x.shape), cout = count_of(out);
  if (!cin.ok || !cout.ok) return err(e.span, "view of " + show(x) + " as " + show(out) + " mixes runtime dims or overflows");
  if (infer >= 0) {
    bool sym_ok = cout.power == cin.power || (cout.power + 1 == cin.power);
    if (cout.coeff == 0 || cin.coeff % cout.coeff != 0 || !sym_ok || (cout.power > 0 && cin.power > 0 && cout.sym != cin.sym)) {
      std::string written = "[";  // the dims as written: the -1 where out holds a 1 for it
      for (size_t k = 0; k < out.size(); ++k)
        written += (k ? ", " : "") + (static_cast<int>(k) == infer ? std::string("-1") : format_dim(out[k], sym_names_));
      return err(e.span, "cannot view " + show(x) + " as " + written + "]: the sizes do not divide");
    }
    int64_t q = cin.coeff / cout.coeff;
    out[static_cast<size_t>(infer)] = cout.power == cin.power ? ir::Dim::constant(q) : ir::Dim::symbol(cin.sym, q);
    cout = count_of(out);
  }
  if (cin.coeff != cout.coeff || cin.power != cout.power || (cin.power > 0 && cin.sym != cout.sym))
    return err(e.span, "cannot view " + show(x) + " as " + show(out) + ": the element counts differ");
  return Value::tensor(reshape(x.id, out), x.dtype, out);
}

Value Elaborator::gather(const Value& table, const Value& idx, const Expr& e) {
  if (idx.dtype != DType::I32) return err(e.args[1]->span, "a gather index must be i32, found " + show(idx));
  if (table.shape.empty()) return err(e.span, "cannot gather from a rank-0 tensor");
  ir::Shape out = idx.shape;
  out.insert(out.end(), table.shape.begin() + 1, table.shape.end());
  return emit_value(ir::Op::Gather, table.dtype, out, {table.id, idx.id});
}

Value Elaborator::concat(const std::vector<Arg>& args, const Expr& e) {
  std::vector<const Arg*> parts;
  int64_t axis = 0;
  bool have_axis = false;
  for (const auto& a : args) {
    if (a.name == "axis") {
      if (a.value.kind != K::Int) return err(a.span, "axis must be a compile-time integer, found " + show(a.value));
      axis = a.value.i;
      have_axis = true;
    } else if (!a.name.empty()) {
      return err(a.span, "concat has no argument '" + a.name + "'");
    } else if (!a.value.is_tensor()) {
      return err(a.span, "concat joins tensors, found " + show(a.value));
    } else {
      parts.push_back(&a);
    }
  }
  if (!have_axis) return err(e.span, "concat needs axis=");
  if (parts.size() < 2) return err(e.span, "concat needs at least two tensors");
  const Value& first = parts[0]->value;
  auto ax = norm_axis(axis, first.shape.size(), e.span);
  if (!ax) return Value::error();
  DType dt = first.dtype;
  ir::Shape out = first.shape;
  size_t a_ = static_cast<size_t>(*ax);
  for (size_t k = 1; k < parts.size(); ++k) {
    const Value& v = parts[k]->value;
    auto c = common_dtype(dt, v.dtype);
    if (!c) return err(parts[k]->span, "dtype mismatch in concat: " + show(first) + " and " + show(v));
    dt = *c;
    if (v.shape.size() != first.shape.size())
      return err(parts[k]->span, "wrong rank in concat: " + show(first) + " and " + show(v));
    for (size_t d = 0; d < out.size(); ++d) {
      if (d == a_) {
        if (out[d].sym != v.shape[d].sym)
          return err(parts[k]->span, "concat along axis " + std::to_string(a_) + " of " + show(first.shape) + " and " + show(v.shape) + ": mixed runtime dims");
        // Checked: dims are at most kMaxDim each, but a chain of concats can double them past it.
        int64_t joined = 0;
        if (__builtin_add_overflow(out[d].coeff, v.shape[d].coeff, &joined) || joined > kMaxDim)
          return err(parts[k]->span, fmt::format("concat along axis {} of {} and {}: the joined dim is more than 2^40",
                                                 a_, show(first.shape), show(v.shape)));
        out[d].coeff = joined;
      } else if (!(out[d] == v.shape[d])) {
        return err(parts[k]->span, "shape mismatch in concat: " + show(first.shape) + " and " + show(v.shape) + " differ outside axis " + std::to_string(a_));
      }
    }
  }
  std::vector<ir::ValueId> ids;
  for (auto* p : parts) ids.push_back(cast(p->value.id, dt));
  ir::Attrs attrs;
  attrs.axis = static_cast<int32_t>(a_);
  return emit_value(ir::Op::Concat, dt, out, ids, attrs);
}

Value Elaborator::arange(const std::vector<Arg>& args, const Expr& e) {
  for (const auto& a : args)
    if (!a.name.empty()) return err(a.span, "arange takes positional arguments only");
  if (args.empty() || args.size() > 3) return err(e.span, fmt::format("arange takes 1 to 3 arguments, found {}", args.size()));
  if (args.size() == 1 && args[0].value.kind == K::Dim)
    return emit_value(ir::Op::Arange, DType::I32, {args[0].value.dim}, {});
  for (const auto& a : args)
    if (a.value.kind != K::Int) return err(a.span, "arange bounds must be compile-time integers, found " + show(a.value));
  int64_t start = args.size() >= 2 ? args[0].value.i : 0;
  int64_t stop = args.size() >= 2 ? args[1].value.i : args[0].value.i;
  int64_t step = args.size() == 3 ? args[2].value.i : 1;
  if (step <= 0) return err(e.span, "arange step must be positive");
  if (stop <= start || stop - start > (int64_t{1} << 31) || start < INT32_MIN || stop > INT32_MAX)
    return err(e.span, fmt::format("arange({}, {}, {}) is empty or out of the i32 range", start, stop, step));
  int64_t n = ir::slice_length(start, stop, step);
  ir::Shape s{ir::Dim::constant(n)};
  ir::ValueId v = emit(ir::Op::Arange, DType::I32, s, {});
  // One element is `start` whatever the step (which may then be past the i32 range).
  if (step != 1 && n > 1) v = emit(ir::Op::Mul, DType::I32, s, {v, scalar_const(static_cast<double>(step), DType::I32, 1)});
  if (start != 0) v = emit(ir::Op::Add, DType::I32, s, {v, scalar_const(static_cast<double>(start), DType::I32, 1)});
  return Value::tensor(v, DType::I32, s);
}

Value Elaborator::attention(const std::vector<Arg>& args, const Expr& e) {
  std::vector<const Arg*> pos_args;
  std::optional<double> scale;
  int64_t window = 0;  // none
  double softcap = 0;  // none
  for (const auto& a : args) {
    if (a.name == "scale") {
      if (!a.value.is_number()) return err(a.span, "scale must be a compile-time number, found " + show(a.value));
      scale = a.value.as_double();
      if (!(*scale > 0) || !std::isfinite(*scale)) return err(a.span, fmt::format("scale must be positive, found {}", *scale));
    } else if (a.name == "window") {
      // `none` (a config's null sliding_window) means no window, as transformers' None does.
      if (a.value.kind == Value::Kind::Null) continue;
      if (a.value.kind != Value::Kind::Int || a.value.i <= 0)
        return err(a.span, "window must be a positive compile-time integer or none, found " + show(a.value));
      window = a.value.i;
    } else if (a.name == "softcap") {
      if (a.value.kind == Value::Kind::Null) continue;
      if (!a.value.is_number() || !(a.value.as_double() > 0) || !std::isfinite(a.value.as_double()))
        return err(a.span, "softcap must be a positive compile-time number or none, found " + show(a.value));
      softcap = a.value.as_double();
    } else if (!a.name.empty()) {
      return err(a.span, "attention has no argument '" + a.name + "'");
    } else {
      pos_args.push_back(&a);
    }
  }
  if (pos_args.size() != 4) return err(e.span, fmt::format("attention takes (q, k, v, pos), found {} arguments", pos_args.size()));
  const Value &q = pos_args[0]->value, &k = pos_args[1]->value, &v = pos_args[2]->value, &pos = pos_args[3]->value;
  const char* names[] = {"q", "k", "v", "pos"};
  for (size_t i = 0; i < 4; ++i)
    if (!pos_args[i]->value.is_tensor()) return err(pos_args[i]->span, std::string("attention's ") + names[i] + " must be a tensor, found " + show(pos_args[i]->value));
  if (q.shape.size() != 3) return err(pos_args[0]->span, "wrong rank: attention's q must be [T, H, Dh], found " + show(q));
  if (k.shape.size() != 3) return err(pos_args[1]->span, "wrong rank: attention's k must be [KV, S, Dh], found " + show(k));
  if (v.shape.size() != 3) return err(pos_args[2]->span, "wrong rank: attention's v must be [KV, S, Dh], found " + show(v));
  if (pos.shape.size() != 1 || pos.dtype != DType::I32) return err(pos_args[3]->span, "attention's pos must be i32[T], found " + show(pos));
  if (!(k.shape == v.shape)) return err(pos_args[2]->span, "shape mismatch in attention: k " + show(k.shape) + " and v " + show(v.shape) + " differ");
  if (!(q.shape[0] == pos.shape[0])) return err(pos_args[3]->span, "shape mismatch in attention: q " + show(q.shape) + " has " + format_dim(q.shape[0], sym_names_) + " tokens, pos " + show(pos.shape));
  if (!(q.shape[2] == k.shape[2])) return err(pos_args[1]->span, "shape mismatch in attention: head dims of q " + show(q.shape) + " and k " + show(k.shape) + " differ");
  // k and v are the KV cache as a state holds it, [KV, S, Dh]: a [T, KV, Dh] projection put here
  // (the likeliest first try) has the tokens where the KV heads go.
  if (!k.shape[0].is_const() || !k.shape[2].is_const())
    return err(pos_args[1]->span, "attention's k and v must be [KV, S, Dh] with constant KV heads and head dim (a "
                                  "state such as kcache[l], written with this step's keys), found " + show(k));
  if (!q.shape[1].is_const()) return err(pos_args[0]->span, "attention's q must be [T, H, Dh] with constant H, found " + show(q));
  int64_t H = q.shape[1].coeff, KV = k.shape[0].coeff, Dh = q.shape[2].coeff;
  if (H % KV != 0) return err(e.span, fmt::format("attention: {} query heads are not a multiple of {} KV heads", H, KV));
  // The IR keeps the group in an int32: a larger one would wrap and the checked program then fail
  // the IR verifier (or, wrapped to 1, mean the wrong attention).
  if (H / KV > std::numeric_limits<int32_t>::max())
    return err(e.span, fmt::format("attention: {} query heads per KV head ({} / {}) is more than the {} supported", H / KV,
                                   H, KV, std::numeric_limits<int32_t>::max()));
  if (!is_float(q.dtype) || !is_float(k.dtype) || !is_float(v.dtype)) return err(e.span, "attention needs float q, k, v");
  // q, k and v meet at a common float dtype (as binary ops do); the result is f32.
  DType dt = *common_dtype(*common_dtype(q.dtype, k.dtype), v.dtype);
  ir::Attrs a;
  a.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(Dh));  // HF: head_dim ** -0.5
  a.gqa_group = static_cast<int32_t>(H / KV);
  a.window = window;
  a.softcap = softcap;
  return emit_value(ir::Op::Attention, DType::F32, q.shape, {cast(q.id, dt), cast(k.id, dt), cast(v.id, dt), pos.id}, a);
}

// int(x) of a compile-time number: truncation toward zero, as Python's int() (a config float such
// as 4096.0 used as a window or a dim).
Value Elaborator::to_int(const std::vector<Arg>& args, const Expr& e) {
  if (args.size() != 1 || !args[0].name.empty()) return err(e.span, fmt::format("int takes 1 argument, found {}", args.size()));
  const Value& x = args[0].value;
  if (x.kind == K::Int) return x;
  if (x.kind == K::Layer) return Value::of_int(x.i);
  if (x.kind != K::Float) return err(args[0].span, "int needs a compile-time number, found " + show(x));
  const double t = std::trunc(x.f);
  if (!(std::fabs(t) < 9.2e18)) return err(args[0].span, fmt::format("int({}) is out of range", x.f));
  return Value::of_int(static_cast<int64_t>(t));
}

// ---- dispatch

Value Elaborator::call_primitive(const std::string& name, const std::vector<Arg>& args, const Expr& e) {
  auto positional = [&](size_t n) -> bool {
    size_t count = 0;
    for (const auto& a : args) {
      if (!a.name.empty()) {
        err(a.span, name + " has no argument '" + a.name + "'");
        return false;
      }
      ++count;
    }
    if (count != n) {
      err(e.span, fmt::format("{} takes {} argument{}, found {}", name, n, n == 1 ? "" : "s", count));
      return false;
    }
    return true;
  };
  if (auto it = unary_ops().find(name); it != unary_ops().end()) {
    if (!positional(1)) return Value::error();
    return unary_math(it->second, name, args[0].value, e);
  }
  if (name == "maximum" || name == "minimum") {
    if (!positional(2)) return Value::error();
    const Value &a = args[0].value, &b = args[1].value;
    if (a.is_number() && b.is_number()) {
      bool amax = (a.as_double() >= b.as_double()) == (name == "maximum");
      return amax ? a : b;
    }
    // Reuse the binary-op typing (dtypes, weak scalars, broadcasting) through a comparison-free op.
    Value r = tensor_binary(Tok::Plus, a, b, e, name);  // errors name the function, not '+'
    if (r.is_error()) return r;
    ir::Node& n = g_.nodes[static_cast<size_t>(r.id)];
    n.op = name == "maximum" ? ir::Op::Maximum : ir::Op::Minimum;
    return r;
  }
  if (name == "where") {
    if (!positional(3)) return Value::error();
    const Value &c = args[0].value, &a = args[1].value, &b = args[2].value;
    if (!c.is_tensor() || c.dtype != DType::Bool) return err(args[0].span, "where's condition must be a bool tensor, found " + show(c));
    if (!a.is_tensor() && !b.is_tensor()) return err(e.span, "where needs at least one tensor value");
    Value ab = tensor_binary(Tok::Plus, a, b, e, name);  // types and broadcasts a and b
    if (ab.is_error()) return ab;
    ir::Node sum = g_.nodes[static_cast<size_t>(ab.id)];
    g_.nodes.pop_back();  // only its operands are needed
    auto shape = broadcast_shape(c.shape, sum.shape, "where", e.span);
    if (!shape) return Value::error();
    size_t rank = shape->size();
    return emit_value(ir::Op::Where, sum.dtype, *shape,
                      {to_rank(c.id, rank), to_rank(sum.operands[0], rank), to_rank(sum.operands[1], rank)});
  }
  if (name == "sum" || name == "mean" || name == "max" || name == "softmax") {
    const Value* x = nullptr;
    std::optional<int64_t> axis;
    bool keepdim = false;
    for (const auto& a : args) {
      if (a.name.empty()) {
        if (x) return err(a.span, name + " takes one tensor; give the axis as axis=");
        x = &a.value;
      } else if (a.name == "axis") {
        if (a.value.kind != K::Int) return err(a.span, "axis must be a compile-time integer, found " + show(a.value));
        axis = a.value.i;
      } else if (a.name == "keepdim" && name != "softmax") {
        if (a.value.kind != K::Bool) return err(a.span, "keepdim must be true or false, found " + show(a.value));
        keepdim = a.value.b;
      } else {
        return err(a.span, name + " has no argument '" + a.name + "'");
      }
    }
    if (!x) return err(e.span, name + " needs a tensor");
    if (!x->is_tensor()) return err(e.span, name + " needs a tensor, found " + show(*x));
    if (!axis) return err(e.span, name + " needs axis=");
    if (name == "sum") return reduce(ir::Op::ReduceSum, name, *x, *axis, keepdim, e);
    if (name == "mean") return reduce(ir::Op::ReduceSum, name, *x, *axis, keepdim, e);
    if (name == "max") return reduce(ir::Op::ReduceMax, name, *x, *axis, keepdim, e);
    // softmax(x) = exp(x - max) / sum(exp(x - max)): the max keeps exp from overflowing.
    if (!is_float(x->dtype)) return err(e.span, "softmax needs a float tensor, found " + show(*x));
    Value m = reduce(ir::Op::ReduceMax, "max", *x, *axis, true, e);
    if (m.is_error()) return m;
    Value d = emit_value(ir::Op::Sub, x->dtype, x->shape, {x->id, m.id});
    Value ex = emit_value(ir::Op::Exp, x->dtype, x->shape, {d.id});
    Value s = reduce(ir::Op::ReduceSum, "sum", ex, *axis, true, e);
    return emit_value(ir::Op::Div, x->dtype, x->shape, {ex.id, s.id});
  }
  if (name == "concat") return concat(args, e);
  if (name == "arange") return arange(args, e);
  if (name == "attention") return attention(args, e);
  if (name == "int") return to_int(args, e);
  if (name == "topk") return topk(args, e);
  if (name == "moe") return moe(args, e);
  return err(e.span, "unknown function '" + name + "'");
}

Value Elaborator::call_method(const Value& self, const std::string& name, const std::vector<Arg>& args, const Expr& e) {
  // The tensor methods; any other name is answered below (a function such as sum, or a typo).
  static const std::vector<std::string> kMethods = {"to",      "view",      "reshape", "transpose",
                                                     "permute", "unsqueeze", "squeeze"};
  if (!self.is_tensor()) return err(e.span, show(self) + " has no method '" + name + "'");
  const bool method = std::find(kMethods.begin(), kMethods.end(), name) != kMethods.end();
  for (const auto& a : args)
    if (method && !a.name.empty()) return err(a.span, "method " + name + " takes positional arguments only");
  size_t rank = self.shape.size();
  auto want = [&](size_t n) {
    if (args.size() == n) return true;
    err(e.span, fmt::format("{} takes {} argument{}, found {}", name, n, n == 1 ? "" : "s", args.size()));
    return false;
  };
  auto int_arg = [&](size_t k) -> std::optional<int64_t> {
    if (args[k].value.kind != K::Int) {
      err(args[k].span, "expected a compile-time integer, found " + show(args[k].value));
      return std::nullopt;
    }
    return args[k].value.i;
  };
  if (name == "to") {
    if (!want(1)) return Value::error();
    if (args[0].value.kind != K::DType) return err(args[0].span, "to needs a dtype (bf16, f16, f32, i32, bool), found " + show(args[0].value));
    return Value::tensor(cast(self.id, args[0].value.dtype), args[0].value.dtype, self.shape);
  }
  if (name == "view" || name == "reshape") return view(self, args, e);
  if (name == "transpose") {
    if (!want(2)) return Value::error();
    auto a = int_arg(0), b = int_arg(1);
    if (!a || !b) return Value::error();
    auto x = norm_axis(*a, rank, args[0].span), y = norm_axis(*b, rank, args[1].span);
    if (!x || !y) return Value::error();
    ir::Attrs at;
    for (size_t k = 0; k < rank; ++k) at.perm.push_back(static_cast<int32_t>(k));
    std::swap(at.perm[static_cast<size_t>(*x)], at.perm[static_cast<size_t>(*y)]);
    ir::Shape out = self.shape;
    std::swap(out[static_cast<size_t>(*x)], out[static_cast<size_t>(*y)]);
    return emit_value(ir::Op::Permute, self.dtype, out, {self.id}, at);
  }
  if (name == "permute") {
    if (!want(rank)) return Value::error();
    ir::Attrs at;
    std::vector<bool> seen(rank, false);
    ir::Shape out;
    for (size_t k = 0; k < rank; ++k) {
      auto a = int_arg(k);
      if (!a) return Value::error();
      auto x = norm_axis(*a, rank, args[k].span);
      if (!x) return Value::error();
      if (seen[static_cast<size_t>(*x)]) return err(args[k].span, "permute lists axis " + std::to_string(*x) + " twice");
      seen[static_cast<size_t>(*x)] = true;
      at.perm.push_back(static_cast<int32_t>(*x));
      out.push_back(self.shape[static_cast<size_t>(*x)]);
    }
    return emit_value(ir::Op::Permute, self.dtype, out, {self.id}, at);
  }
  if (name == "unsqueeze" || name == "squeeze") {
    if (!want(1)) return Value::error();
    auto a = int_arg(0);
    if (!a) return Value::error();
    ir::Shape out = self.shape;
    if (name == "unsqueeze") {
      auto x = norm_axis(*a, rank + 1, args[0].span);
      if (!x) return Value::error();
      out.insert(out.begin() + *x, ir::Dim::constant(1));
    } else {
      auto x = norm_axis(*a, rank, args[0].span);
      if (!x) return Value::error();
      if (!(out[static_cast<size_t>(*x)] == ir::Dim::constant(1)))
        return err(args[0].span, "squeeze of axis " + std::to_string(*x) + " of " + show(self) + ": its size is not 1");
      out.erase(out.begin() + *x);
    }
    return Value::tensor(reshape(self.id, out), self.dtype, out);
  }
  // `x.mean(-1)`, torch's spelling: the language's reductions and maps are functions of x.
  if (name == "sum" || name == "mean" || name == "max" || name == "softmax")
    return err(e.span, "tensors have no method '" + name + "': it is a function, " + name + "(x, axis=k)");
  if (name == "topk") return err(e.span, "tensors have no method 'topk': it is a function, topk(x, k, axis)");
  for (const ir::OpInfo& op : ir::all_ops())
    if ((op.flags & ir::kLangFn) && op.name == name)  // exp, rsqrt, maximum, ...
      return err(e.span, "tensors have no method '" + name + "': it is a function, " + name + "(x" +
                             (op.arity == 2 ? ", y)" : ")"));
  return err(e.span, "tensors have no method '" + name + "'" + did_you_mean(name, kMethods));
}

}  // namespace lg::lang
