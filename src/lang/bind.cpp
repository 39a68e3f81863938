// Binding the model's declarations to a config.json: dims, consts, dtypes, params (with per-layer
// tensor name templates), state, and requirements.
#include <fmt/format.h>

#include <algorithm>

#include "lang/elaborator.h"

namespace lg::lang {

namespace {
constexpr int64_t kMaxLayers = 4096;
// Experts a layer: each is a checkpoint tensor name per weight, made before anything else could
// refuse the count (num_local_experts = 10^7 took 8 GB and minutes); the compiled lane's experts
// stages take at most this many too.
constexpr int64_t kMaxExperts = 4096;

/// A string const on one line, as the language spells it where it can (\" \\ \n \t); other
/// control characters as \xNN and one that would act on a terminal (source.h's acts_on_terminal)
/// as \u{XXXX}: `lg check`'s consts list printed them raw, a newline breaking the list.
std::string render_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (const size_t n = utf8_len(s, i); n > 0) {
      const uint32_t cp = utf8_code_point(s, i, n);
      if (acts_on_terminal(cp)) out += fmt::format("\\u{{{:04X}}}", cp);
      else out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '"' || c == '\\') out += {'\\', static_cast<char>(c)};
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c >= 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
    ++i;
  }
  return out + "\"";
}

std::string render_value(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return fmt::format("{}", v.f);
    case Value::Kind::Bool: return v.b ? "true" : "false";
    case Value::Kind::Str: return render_string(v.s);
    case Value::Kind::Null: return "none";
    case Value::Kind::DType: return std::string(dtype_name(v.dtype));
    default: return "?";
  }
}

/// Whether `e` reads nothing but the config and literals: no names other than primitives called
/// (`contains(config.x, "y")`). Walks without recursion: an expression may be 200,000 levels deep.
bool reads_config_only(const Expr& e) {
  std::vector<const Expr*> todo{&e};
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->kind == ExprKind::Name) return false;
    for (size_t k = 0; k < x->args.size(); ++k) {
      const Expr* a = x->args[k].get();
      if (!a) continue;
      if (x->kind == ExprKind::Call && k == 0) {
        if (a->kind != ExprKind::Name || !is_primitive(a->text)) return false;
        continue;
      }
      todo.push_back(a);
    }
  }
  return true;
}

/// Whether `e` reads config.model_type (the family a program is the forward of).
bool reads_model_type(const Expr& e) {
  std::vector<const Expr*> todo{&e};
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->kind == ExprKind::Config && x->path.size() == 1 && x->path[0] == "model_type") return true;
    for (const auto& a : x->args)
      if (a) todo.push_back(a.get());
  }
  return false;
}
}  // namespace

std::optional<DType> dtype_from_string(const std::string& s) {
  if (s == "bfloat16") return DType::BF16;
  if (s == "float16" || s == "half") return DType::F16;
  if (s == "float32" || s == "float") return DType::F32;
  if (s == "int32") return DType::I32;
  auto t = parse_dtype(s);
  if (t && (*t == DType::I64 || *t == DType::U8)) return std::nullopt;
  return t;
}

Elaborator::Elaborator(Program& program, const nlohmann::json& config, const BindOptions& opts, CheckReport& report)
    : p_(program), config_(config), opts_(opts), report_(report), g_(report.graph), diags_(program.diags) {}

std::optional<DType> Elaborator::resolve_dtype(const std::string& name) const {
  if (name == "bf16" || name == "f16" || name == "f32" || name == "i32" || name == "bool") return parse_dtype(name);
  auto it = globals_.find(name);
  if (it != globals_.end() && it->second.kind == Value::Kind::DType) return it->second.dtype;
  return std::nullopt;
}

void Elaborator::declare_global(const std::string& name, const Span& span, Value v) {
  if (globals_.count(name) || params_.count(name) || states_.count(name)) {
    err(span, "'" + name + "' is already declared");
    return;
  }
  globals_[name] = std::move(v);
}

bool Elaborator::eval_type(const TypeExpr& t, bool allow_runtime, DType& dtype, ir::Shape& shape) {
  bool ok = true;
  auto dt = resolve_dtype(t.dtype);
  const auto named = globals_.find(t.dtype);
  if (!dt && named != globals_.end() && named->second.is_error()) {
    // A `dtype` declaration that failed has been reported once; every type naming it is
    // silently an error too (as an erroneous value silences the checks that use it).
    ok = false;
  } else if (!dt) {
    err(t.dtype_span, "unknown dtype '" + t.dtype + "': expected bf16, f16, f32, i32, bool or a `dtype` declaration");
    ok = false;
  } else {
    dtype = *dt;
  }
  shape.clear();
  for (const auto& d : t.dims) {
    Value v = eval(*d);
    if (v.is_error()) {
      ok = false;
      continue;
    }
    if (v.kind == Value::Kind::Int) {
      if (v.i <= 0 || v.i > kMaxDim) {
        err(d->span, "dim must be a positive integer of at most 2^40, found " + std::to_string(v.i));
        ok = false;
        continue;
      }
      shape.push_back(ir::Dim::constant(v.i));
    } else if (v.kind == Value::Kind::Dim && allow_runtime) {
      shape.push_back(v.dim);
    } else if (v.kind == Value::Kind::Dim) {
      err(d->span, "runtime dim " + format_dim(v.dim, sym_names_) + " in a declaration: params and state have sizes bound from the config");
      ok = false;
    } else {
      err(d->span, "expected an integer dim, found " + show(v));
      ok = false;
    }
  }
  return ok;
}

// The checkpoint tensor name of param `d` from its template `tmpl`: {layer var} is `layer`; in
// an experts block, {expert var} stays in the returned name (for messages) and each expert's own
// name goes to `parts`. Reports a bad or missing placeholder and an empty name, and then returns
// nullopt.
std::optional<std::string> Elaborator::tensor_name(const Decl& d, const std::string& tmpl, int64_t layer,
                                                   const ExpertRange* experts, std::vector<std::string>& parts) {
  std::string tensor = tmpl;
  bool ok = true;
  // Expand the layer template: "{l}" is the layer index; any other placeholder is a mistake.
  std::string out;
  bool has_index = false;
  for (size_t k = 0; k < tensor.size(); ++k) {
    if (tensor[k] != '{') {
      out += tensor[k];
      continue;
    }
    size_t close = tensor.find('}', k);
    if (close == std::string::npos) {
      err(d.value->span, "unclosed '{' in tensor name \"" + tensor + "\": a placeholder is {name}");
      ok = false;
      break;
    }
    std::string key = tensor.substr(k + 1, close - k - 1);
    if (layer >= 0 && key == layer_var_) {
      out += std::to_string(layer);
      has_index = true;
      k = close;
    } else if (experts && key == experts->var) {
      out += '\x01';  // the expert index, expanded per part below
      k = close;
    } else {
      err(d.value->span, layer >= 0 ? "unknown placeholder '{" + key + "}' in tensor name \"" + tensor +
                                          "\": the layer index is {" + layer_var_ + "}"
                                    : "placeholder '{" + key + "}' in tensor name \"" + tensor +
                                          "\" outside a layers block");
      ok = false;
      break;
    }
  }
  if (ok && layer >= 0 && !has_index) {
    err(d.value->span, "param template \"" + tensor + "\" names no layer index: write {" + layer_var_ +
                           "} where the layer number goes");
    ok = false;
  }
  tensor = out;
  if (experts && ok) {
    // Stacked: one checkpoint tensor per expert, the template keeps `{e}` for messages.
    if (out.find('\x01') == std::string::npos) {
      err(d.value->span, "param template \"" + tmpl + "\" names no expert index: write {" + experts->var +
                             "} where the expert number goes");
      ok = false;
    }
    tensor.clear();
    for (char c : out) tensor += c == '\x01' ? "{" + experts->var + "}" : std::string(1, c);
    for (int64_t x = experts->lo; x < experts->hi && ok; ++x) {
      std::string part;
      for (char c : out) part += c == '\x01' ? std::to_string(x) : std::string(1, c);
      parts.push_back(std::move(part));
    }
  }
  if (tensor.empty()) {
    err(d.value->span, "empty tensor name");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return tensor;
}

void Elaborator::bind_param(const Decl& d, const std::string& display, int64_t layer,
                            std::unordered_map<std::string, ParamSlot>& into, const ExpertRange* experts) {
  ParamSlot slot;
  slot.name = display;
  slot.span = d.span;
  if (into.count(d.name) || (layer < 0 && (globals_.count(d.name) || states_.count(d.name)))) {
    err(d.name_span, "'" + d.name + "' is already declared");
    return;
  }
  bool ok = eval_type(d.type, false, slot.dtype, slot.shape);
  // `= "tensor".T`: the checkpoint stores the transpose of this (rank-2) param; loaders swap the axes.
  const Expr* name_expr = d.value.get();
  const bool transposed = name_expr->kind == ExprKind::Member && name_expr->text == "T";
  if (transposed) {
    name_expr = name_expr->args[0].get();
    if (ok && slot.shape.size() != 2) {
      err(d.value->span, "a param stored transposed (\"name\".T) must be rank 2, not rank " +
                             std::to_string(slot.shape.size()));
      ok = false;
    }
  }
  if (transposed && experts) {
    err(d.value->span, "a param of an experts block cannot be stored transposed (\"name\".T)");
    ok = false;
  }
  Value name = eval_maybe_missing(*name_expr);
  std::string tensor;
  std::vector<std::string> parts;
  if (name.kind == Value::Kind::Null) {
    slot.absent = true;
  } else if (name.kind == Value::Kind::Str) {
    const std::optional<std::string> t = tensor_name(d, name.s, layer, experts, parts);
    ok = ok && t.has_value();
    if (t) tensor = *t;
    if (ok && experts) slot.shape.insert(slot.shape.begin(), ir::Dim::constant(experts->hi - experts->lo));
  } else if (!name.is_error()) {
    err(d.value->span, "expected a tensor name (a string, or none if absent), found " + show(name));
    ok = false;
  } else {
    ok = false;
  }
  slot.ok = ok;
  if (ok && !slot.absent) {
    // Params bound to the same checkpoint tensor (tied embeddings) share one graph param.
    const std::string key = transposed ? tensor + "\n.T" : tensor;
    auto it = tensor_to_param_.find(key);
    if (it != tensor_to_param_.end()) {
      const ir::ParamInfo& prev = g_.params[static_cast<size_t>(it->second)];
      if (prev.dtype != slot.dtype || prev.shape != slot.shape) {
        err(d.span, "tensor \"" + tensor + "\" is bound to '" + prev.name + "' as " + show(prev.dtype, prev.shape) +
                        " and to '" + display + "' as " + show(slot.dtype, slot.shape));
        slot.ok = false;
      }
      slot.index = it->second;
    } else {
      slot.index = static_cast<int32_t>(g_.params.size());
      tensor_to_param_[key] = slot.index;
      g_.params.push_back({display, tensor, slot.dtype, slot.shape, transposed, std::move(parts),
                           {d.span.file, d.span.line, d.span.col, d.span.end_line, d.span.end_col}});
    }
  }
  if (slot.ok) report_.params.push_back({display, slot.absent ? "" : tensor, slot.dtype, slot.shape});
  into[d.name] = std::move(slot);
}

void Elaborator::bind_experts(const Decl& d, int64_t layer, std::unordered_map<std::string, ParamSlot>& into) {
  Value lo = eval(*d.value), hi = eval(*d.value2);
  if (lo.is_error() || hi.is_error()) return;
  if (lo.kind != Value::Kind::Int || hi.kind != Value::Kind::Int || lo.i < 0 || hi.i <= lo.i || hi.i - lo.i > kMaxDim) {
    err(join(d.value->span, d.value2->span), "experts range must be ascending integers from 0 or more, found " +
                                                 show(lo) + " .. " + show(hi));
    return;
  }
  if (hi.i - lo.i > kMaxExperts) {
    err(join(d.value->span, d.value2->span),
        fmt::format("experts range {}..{} has {} experts, at most {} are supported", lo.i, hi.i, hi.i - lo.i, kMaxExperts));
    return;
  }
  if (d.name == layer_var_) {
    err(d.name_span, "the expert variable '" + d.name + "' is the layer variable");
    return;
  }
  const ExpertRange range{d.name, lo.i, hi.i};
  frames_.push_back(Frame{});
  frames_.back().vars[layer_var_] = Value::of_int(layer);
  for (const Decl& pd : d.body) bind_param(pd, "l" + std::to_string(layer) + "." + pd.name, layer, into, &range);
  frames_.pop_back();
}

bool Elaborator::require_message(const Expr* message, std::string& out) {
  if (!message) return true;
  const Value mv = eval(*message);
  if (mv.is_error()) return false;
  if (mv.kind != Value::Kind::Str) {
    err(message->span, "a require's message must be a string, found " + show(mv));
    return false;
  }
  out = mv.s;
  return true;
}

void Elaborator::check_require(const Decl& d) {
  Value c = eval(*d.value);
  std::string message;
  const bool message_ok = require_message(d.value2.get(), message);
  if (c.is_error()) return;
  if (c.kind != Value::Kind::Bool) {
    err(d.value->span, "require needs a bool condition, found " + show(c));
    return;
  }
  if (!c.b && message_ok) {
    err(d.span, d.value2 ? "requirement failed: " + message : std::string("requirement failed"));
    config_refused_ = true;
  }
}

void Elaborator::check_config_requires() {
  for (const Decl& d : p_.model->decls) {
    if (d.kind != DeclKind::Require || !reads_config_only(*d.value) || (d.value2 && !reads_config_only(*d.value2)))
      continue;
    early_requires_.insert(&d);
    check_require(d);
    // A config of another family fails the others too, for that reason alone: its one error is this.
    if (config_refused_ && reads_model_type(*d.value)) return;
  }
}

void Elaborator::bind() {
  const Model& m = *p_.model;
  g_.model = m.name;
  report_.model = m.name;
  // Requires on the config alone come first, and a failed one ends the binding: a config of
  // another family is told so once, not with the keys it lacks (docs/language.md, `require`).
  check_config_requires();
  if (config_refused_) return;
  bind_max_seq();
  for (const Decl& d : m.decls) {
    if (config_refused_) break;  // a failed require: what follows would only fail because of it
    bind_decl(d);
  }
}

void Elaborator::bind_max_seq() {
  const Model& m = *p_.model;
  // S: the KV-cache capacity, the bound of every runtime dim. The max sequence length given
  // (--max-seq) wins; else the program's own `S = ...` dim (a config without
  // max_position_embeddings, e.g. GPT-2's n_positions), bound where the dims block declares it;
  // else config.max_position_embeddings.
  const bool program_s = std::any_of(m.decls.begin(), m.decls.end(),
                                     [](const Decl& d) { return d.kind == DeclKind::Dim && d.name == "S"; });
  s_given_ = opts_.max_seq > 0;
  global_kind_["S"] = "dim";
  if (!s_given_ && program_s) return;  // bound where the dims block declares it
  int64_t S = opts_.max_seq;
  bool reported = false;  // the config's key is missing: said, not said again as out of range
  if (S <= 0) {
    auto it = config_.find("max_position_embeddings");
    // 4096.0, an integer some exporters write as a float, counts as the config reader
    // (model/json_fields.h's opt_int) counts it; it was refused here alone.
    const bool integral_float = it != config_.end() && it->is_number_float() && it->get<double>() >= 1.0 &&
                                it->get<double>() <= static_cast<double>(kMaxDim) &&
                                it->get<double>() == static_cast<double>(static_cast<int64_t>(it->get<double>()));
    if (integral_float) {
      S = static_cast<int64_t>(it->get<double>());
    } else if (it == config_.end() || !it->is_number_integer()) {
      err(m.span,
          "config key 'max_position_embeddings' is missing or not an integer, and no max sequence length was given "
          "(give one with --max-seq, or declare `S = ...` in the dims block)");
      reported = true;
    } else {
      S = it->get<int64_t>();
    }
  }
  if (S > 0 && S <= kMaxDim) {
    globals_["S"] = Value::of_int(S);
    report_.dims.push_back({"S", std::to_string(S)});
  } else {
    // max_position_embeddings 0 too: every other dim of size 0 is an error (it checked clean, with
    // its states of 0 positions, and only lg run refused it).
    if (!reported)
      err(m.span, "max sequence length " + std::to_string(S) + (s_given_ ? " (--max-seq)" : " (config max_position_embeddings)") +
                      " is out of range: it must be between 1 and " + std::to_string(kMaxDim));
    globals_["S"] = Value::error();
  }
}

void Elaborator::bind_decl(const Decl& d) {
  switch (d.kind) {
    case DeclKind::Dim: {
      Value v = eval(*d.value);
      if (!v.is_error() && (v.kind != Value::Kind::Int || v.i <= 0 || v.i > kMaxDim)) {
        err(d.value->span, "dim '" + d.name + "' must be a positive integer of at most 2^40, found " + show(v));
        v = Value::error();
      }
      if (d.name == "S" && s_given_) break;  // the max sequence length given wins over the program's S
      declare_global(d.name, d.name_span, v);
      global_kind_[d.name] = "dim";
      if (!v.is_error()) report_.dims.push_back({d.name, std::to_string(v.i)});
      break;
    }
    case DeclKind::Const: {
      Value v = eval(*d.value);
      if (!v.is_error() && v.kind != Value::Kind::Int && v.kind != Value::Kind::Float &&
          v.kind != Value::Kind::Bool && v.kind != Value::Kind::Str && v.kind != Value::Kind::Null) {
        err(d.value->span, "const '" + d.name + "' must be a number, bool or string, found " + show(v));
        v = Value::error();
      }
      declare_global(d.name, d.name_span, v);
      global_kind_[d.name] = "const";
      if (!v.is_error()) report_.consts.push_back({d.name, render_value(v)});
      break;
    }
    case DeclKind::DType: {
      Value v = eval(*d.value);
      if (v.kind == Value::Kind::Str) {
        auto t = dtype_from_string(v.s);
        if (!t) {
          err(d.value->span, "unknown dtype \"" + v.s + "\": expected bf16, f16, f32 (or bfloat16, float16, float32)");
          v = Value::error();
        } else {
          v = Value::of_dtype(*t);
        }
      } else if (!v.is_error() && v.kind != Value::Kind::DType) {
        err(d.value->span, "dtype '" + d.name + "' must be a dtype or its name, found " + show(v));
        v = Value::error();
      }
      declare_global(d.name, d.name_span, v);
      global_kind_[d.name] = "dtype";
      if (!v.is_error()) report_.consts.push_back({d.name, render_value(v)});
      break;
    }
    case DeclKind::Param: bind_param(d, d.name, -1, params_); break;
    case DeclKind::Layers: bind_layers(d); break;
    case DeclKind::State: bind_state(d); break;
    case DeclKind::Experts:  // the parser makes them only inside a layers block
      err(d.span, "an experts block belongs inside a layers block");
      break;
    case DeclKind::Require:
      if (!early_requires_.count(&d)) check_require(d);
      break;
  }
}

void Elaborator::bind_layers(const Decl& d) {
  if (has_layers_) {
    err(d.span, "a model has one layers block; this is a second one");
    return;
  }
  Value lo = eval(*d.value), hi = eval(*d.value2);
  layers_failed_ = true;  // until the range checks out
  if (lo.is_error() || hi.is_error()) return;
  if (lo.kind != Value::Kind::Int || hi.kind != Value::Kind::Int) {
    err(join(d.value->span, d.value2->span), "layers range must be integers, found " + show(lo) + " .. " + show(hi));
    return;
  }
  if (lo.i < 0 || hi.i < lo.i || hi.i - lo.i > kMaxLayers) {
    err(join(d.value->span, d.value2->span), fmt::format("layers range {}..{} must be ascending, from 0 or more, at most {} layers", lo.i, hi.i, kMaxLayers));
    return;
  }
  has_layers_ = true;
  layers_failed_ = false;
  layer_var_ = d.name;
  layer_lo_ = lo.i;
  layer_params_.resize(static_cast<size_t>(hi.i - lo.i));
  for (int64_t l = lo.i; l < hi.i; ++l) {
    frames_.push_back(Frame{});
    frames_.back().vars[d.name] = Value::of_int(l);
    for (const Decl& pd : d.body) {
      auto& into = layer_params_[static_cast<size_t>(l - lo.i)];
      if (pd.kind == DeclKind::Experts) bind_experts(pd, l, into);
      else bind_param(pd, "l" + std::to_string(l) + "." + pd.name, l, into);
    }
    frames_.pop_back();
  }
}

void Elaborator::bind_state(const Decl& d) {
  StateSlot s;
  s.name = d.name;
  s.span = d.span;
  if (globals_.count(d.name) || params_.count(d.name) || states_.count(d.name)) {
    err(d.name_span, "'" + d.name + "' is already declared");
    return;
  }
  s.ok = eval_type(d.type, false, s.dtype, s.shape);
  if (s.ok) {
    s.index = static_cast<int32_t>(g_.states.size());
    g_.states.push_back({d.name, s.dtype, s.shape});
    report_.states.push_back({d.name, show(s.dtype, s.shape)});
  }
  state_order_.push_back(d.name);
  states_[d.name] = std::move(s);
}

}  // namespace lg::lang
