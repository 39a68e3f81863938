// The mixture-of-experts primitives of the language: topk (values and indices), moe (routed
// SwiGLU experts over expert weights stacked [E, ...]) and contains (membership in a config
// list, for per-layer choices such as Qwen3-MoE's mlp_only_layers). docs/language.md defines
// them; the CPU reference (src/ir/cpu_moe.h) defines the ops they lower to.
#include <fmt/format.h>

#include "lang/elaborator.h"

namespace lg::lang {

using K = Value::Kind;

// topk(x, k, axis): the k largest along axis, largest first -> (values, indices: i32).
Value Elaborator::topk(const std::vector<Arg>& args, const Expr& e) {
  std::vector<const Arg*> pos;
  const Arg* axis_arg = nullptr;
  for (const auto& a : args) {
    if (a.name.empty()) pos.push_back(&a);
    else if (a.name == "axis") axis_arg = &a;
    else return err(a.span, "topk has no argument '" + a.name + "'");
  }
  if (!axis_arg && pos.size() == 3) axis_arg = pos.back(), pos.pop_back();
  if (pos.size() != 2 || !axis_arg)
    return err(e.span, "topk takes (x, k, axis): a tensor, a count and the axis to select along");
  const Value& x = pos[0]->value;
  if (!x.is_tensor()) return err(pos[0]->span, "topk needs a tensor, found " + show(x));
  if (x.dtype == DType::Bool) return err(pos[0]->span, "topk needs a number tensor, found " + show(x));
  if (pos[1]->value.kind != K::Int) return err(pos[1]->span, "topk's k must be a compile-time integer, found " + show(pos[1]->value));
  if (axis_arg->value.kind != K::Int)
    return err(axis_arg->span, "axis must be a compile-time integer, found " + show(axis_arg->value));
  auto ax = norm_axis(axis_arg->value.i, x.shape.size(), axis_arg->span);
  if (!ax) return Value::error();
  const ir::Dim n = x.shape[static_cast<size_t>(*ax)];
  if (!n.is_const())
    return err(axis_arg->span, "topk along the runtime dim " + format_dim(n, sym_names_) +
                                   " would make a token's result depend on the other tokens of the step");
  const int64_t k = pos[1]->value.i;
  if (k < 1 || k > n.coeff)
    return err(pos[1]->span, fmt::format("topk's k must be between 1 and the axis length {}, found {}", n.coeff, k));
  ir::Shape out = x.shape;
  out[static_cast<size_t>(*ax)] = ir::Dim::constant(k);
  ir::Attrs a;
  a.axis = static_cast<int32_t>(*ax);
  Value t;
  t.kind = K::Tuple;
  t.items.push_back(emit_value(ir::Op::TopK, x.dtype, out, {x.id}, a));
  t.items.push_back(emit_value(ir::Op::ArgTopK, DType::I32, out, {x.id}, a));
  return t;
}

// moe(x, idx, w, wg, wu, wd): sum_k w[t,k] * wd[e] @ (silu(wg[e] @ x[t]) * (wu[e] @ x[t])), e = idx[t,k].
Value Elaborator::moe(const std::vector<Arg>& args, const Expr& e) {
  for (const auto& a : args)
    if (!a.name.empty()) return err(a.span, "moe takes positional arguments only");
  if (args.size() != 6)
    return err(e.span, fmt::format("moe takes (x, idx, w, wg, wu, wd), found {} arguments", args.size()));
  static const char* names[] = {"x", "idx", "w", "wg", "wu", "wd"};
  for (size_t k = 0; k < 6; ++k)
    if (!args[k].value.is_tensor())
      return err(args[k].span, std::string("moe's ") + names[k] + " must be a tensor, found " + show(args[k].value));
  const Value &x = args[0].value, &idx = args[1].value, &w = args[2].value, &wg = args[3].value,
              &wu = args[4].value, &wd = args[5].value;
  if (x.shape.size() != 2 || !is_float(x.dtype)) return err(args[0].span, "moe's x must be float [T, D], found " + show(x));
  if (idx.shape.size() != 2 || idx.dtype != DType::I32 || !(idx.shape[0] == x.shape[0]))
    return err(args[1].span, "moe's idx must be i32[T, K] with x's T, found " + show(idx) + " for x " + show(x));
  if (!idx.shape[1].is_const()) return err(args[1].span, "moe's idx must have a constant K, found " + show(idx));
  if (!(w.shape == idx.shape) || !is_float(w.dtype))
    return err(args[2].span, "moe's w must be float of idx's shape " + show(idx.shape) + ", found " + show(w));
  for (size_t k = 3; k < 6; ++k)
    if (args[k].value.shape.size() != 3 || !is_float(args[k].value.dtype))
      return err(args[k].span, std::string("moe's ") + names[k] + " must be float expert weights [E, ...], found " +
                                   show(args[k].value));
  if (!(wg.shape == wu.shape) || !(wg.shape[2] == x.shape[1]))
    return err(args[3].span, "moe's wg and wu must both be [E, F, D] with x's D = " + format_dim(x.shape[1], sym_names_) +
                                 ", found " + show(wg) + " and " + show(wu));
  if (!(wd.shape[0] == wg.shape[0]) || !(wd.shape[1] == x.shape[1]) || !(wd.shape[2] == wg.shape[1]))
    return err(args[5].span, "moe's wd must be [E, D, F] = " +
                                 show(ir::Shape{wg.shape[0], x.shape[1], wg.shape[1]}) + ", found " + show(wd));
  Value act = emit_value(ir::Op::MoeGateUp, DType::F32, {x.shape[0], idx.shape[1], wg.shape[1]}, {x.id, idx.id, wg.id, wu.id});
  return emit_value(ir::Op::MoeDown, DType::F32, {x.shape[0], x.shape[1]}, {act.id, idx.id, w.id, wd.id});
}

// contains(config.key, v): whether the config list holds v (an absent or null key: an empty list).
// Evaluated before its arguments, since a config list is no value of the language.
Value Elaborator::contains(const Expr& e) {
  if (e.args.size() != 3 || !e.arg_names[0].empty() || !e.arg_names[1].empty())
    return err(e.span, "contains takes (config.key, value): a list in config.json and a compile-time value");
  const Expr& list = *e.args[1];
  if (list.kind != ExprKind::Config)
    return err(list.span, "contains' first argument must name a list in config.json (config.key)");
  Value v = eval(*e.args[2]);
  if (v.is_error()) return v;
  if (v.kind != K::Int && v.kind != K::Layer && v.kind != K::Str)
    return err(e.args[2]->span, "contains compares integers or strings, found " + show(v));
  const ConfigLookup r = config_lookup(list);
  if (r.failed) return Value::error();
  if (!r.value) return Value::of_bool(false);
  const nlohmann::json* j = r.value;
  if (!j->is_array()) return err(list.span, "config key '" + fmt::format("{}", fmt::join(list.path, ".")) + "' is not a list");
  for (const auto& item : *j) {
    if (v.kind == K::Str ? item.is_string() && item.get<std::string>() == v.s
                         : item.is_number_integer() && item.get<int64_t>() == v.i)
      return Value::of_bool(true);
  }
  return Value::of_bool(false);
}

}  // namespace lg::lang
