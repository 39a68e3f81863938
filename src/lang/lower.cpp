// The forward: inputs, statements (bindings, state writes, the layer loop, return), and the
// public entry points check_source / check_file / lower_file.
#include "lang/lower.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "lang/elaborator.h"
#include "support/did_you_mean.h"
#include "support/error.h"
#include "support/text_input.h"

namespace lg::lang {

using K = Value::Kind;

void Elaborator::run() {
  try {
    bind();
    if (!config_refused_) lower_forward();
  } catch (const TooLarge&) {
    err(stmt_span_, fmt::format("program too large: more than {} IR nodes after unrolling layers and inlining fns",
                                opts_.max_nodes));
  }
  for (size_t k = 0; k < p_.sources.size(); ++k) g_.files.push_back(p_.sources.file(static_cast<int32_t>(k)).name);
}

void Elaborator::record(const Stmt& s, const std::string& target, const std::string& type) {
  if (!recording_ || frames_.size() != 1) return;
  report_.statements.push_back({s.span, cur_layer_, target, type});
}

void Elaborator::lower_forward() {
  const Forward& f = p_.model->forward;
  if (!f.present) return;
  frames_.push_back(Frame{});
  stmt_span_ = f.span;
  // Inputs. A name in an input's shape that is not a declared dim is a runtime dim (T).
  bool inputs_ok = true;
  for (size_t k = 0; k < f.inputs.size(); ++k) {
    const InputDecl& in = f.inputs[k];
    for (const auto& d : in.type.dims) {
      if (d->kind == ExprKind::Name && !globals_.count(d->text) && !resolve_dtype(d->text)) {
        int32_t sym = static_cast<int32_t>(g_.symbols.size());
        auto S = globals_["S"];
        g_.symbols.push_back({d->text, S.kind == K::Int ? S.i : 0});
        sym_names_.push_back(d->text);
        globals_[d->text] = Value::of_dim(ir::Dim::symbol(sym));
        global_kind_[d->text] = "runtime dim";
        report_.symbols.push_back(d->text + " <= " + (S.kind == K::Int ? std::to_string(S.i) : "?"));
      }
    }
    DType dt = DType::F32;
    ir::Shape shape;
    if (!eval_type(in.type, true, dt, shape)) {
      inputs_ok = false;
      frames_.back().vars[in.name] = Value::error();
      continue;
    }
    if (frames_.back().vars.count(in.name) || params_.count(in.name) || states_.count(in.name) || globals_.count(in.name)) {
      err(in.span, "input '" + in.name + "' is already declared");
      continue;
    }
    g_.inputs.push_back({in.name, dt, shape});
    ir::Attrs a;
    a.index = static_cast<int32_t>(g_.inputs.size() - 1);
    stmt_name_ = in.name;
    stmt_span_ = in.span;
    frames_.back().vars[in.name] = emit_value(ir::Op::Input, dt, shape, {}, a);
  }
  DType ret_dtype = DType::F32;
  ir::Shape ret_shape;
  bool ret_ok = eval_type(f.result, true, ret_dtype, ret_shape) && inputs_ok;

  Value ret = exec_block(f.body, true);
  if (!ret.is_error()) {
    if (!ret.is_tensor()) {
      err(f.result.span, "forward must return a tensor, found " + show(ret));
    } else if (ret_ok && (ret.dtype != ret_dtype || !(ret.shape == ret_shape))) {
      err(return_span_, "forward returns " + show(ret.dtype, ret.shape) + " but declares " + show(ret_dtype, ret_shape));
    } else {
      g_.outputs.push_back(ret.id);
    }
  }
  // What this step leaves in each state: its last version (the initial one if never written).
  stmt_span_ = f.end_span;
  for (const auto& name : state_order_) {
    StateSlot& s = states_[name];
    if (!s.ok) continue;
    Value v = state_value(s);
    g_.final_states.push_back(v.id);
  }
  frames_.pop_back();
}

Value Elaborator::exec_block(const std::vector<Stmt>& body, bool top_level_forward) {
  bool in_fn = frames_.back().fn != nullptr;
  for (size_t k = 0; k < body.size(); ++k) {
    const Stmt& s = body[k];
    if (!in_fn) stmt_span_ = s.span;
    switch (s.kind) {
      case StmtKind::Let: exec_let(s); break;
      case StmtKind::Require:
        // A fn whose requirement fails ends there, its value an error: what its body would go on
        // to compute could only fail because of it (the prelude's rope on an odd head dim).
        if (!exec_require(s) && in_fn) return Value::error();
        break;
      case StmtKind::Write:
        if (in_fn) {
          err(s.span, "fn '" + frames_.back().fn->name + "' writes state: fns are pure, write state in forward");
          break;
        }
        exec_write(s);
        break;
      case StmtKind::For:
        if (in_fn) {
          err(s.span, "'for' is only allowed in forward, not in fn '" + frames_.back().fn->name + "'");
          break;
        }
        if (!top_level_forward) {
          err(s.span, "'for' over layers cannot be nested");
          break;
        }
        exec_for(s);
        break;
      case StmtKind::Return: {
        if (!in_fn && !top_level_forward) {
          err(s.span, "return inside 'for': forward returns once, after the layers");
          break;
        }
        if (k + 1 != body.size()) err(body[k + 1].span, "statement after return");
        if (!in_fn) {
          stmt_name_ = "return";
          return_span_ = s.value->span;
        }
        Value v = eval(*s.value);
        if (!in_fn && v.is_tensor()) record(s, "return", show(v.dtype, v.shape));
        return v;
      }
    }
  }
  // A syntax error may have swallowed the return: don't report its absence too.
  if (p_.syntax_errors > 0) return Value::error();
  if (in_fn) return err(frames_.back().fn->span, "fn '" + frames_.back().fn->name + "' does not end with return");
  if (top_level_forward) return err(p_.model->forward.end_span, "forward ends without return");
  return Value::error();
}

// After a syntax error, a name the dropped statement would have bound (`x = embed[tokens` with
// its ')' missing) reads as unknown further on: such errors say nothing new, and are left out
// until the syntax error is fixed. Other unknown names, and uses before the dropped statement,
// are still reported in the same run.
Value Elaborator::unknown_name(const Span& span, const std::string& name) {
  if (p_.main.dropped_before(name, span)) return Value::error();
  // Suggested from what the name could have been here: a fn sees its own names only.
  std::vector<std::string> near;
  if (!frames_.empty())
    for (const auto& [n, v] : frames_.back().vars) near.push_back(n);
  if (frames_.empty() || !frames_.back().fn) {
    for (const auto& [n, v] : globals_) near.push_back(n);
    for (const auto& [n, p] : params_) near.push_back(n);
    for (const auto& [n, st] : states_) near.push_back(n);
  }
  // A dim, const or dtype the model declares further down (`Dh = F // H` above `F = ...`): declarations
  // are bound in order, so say where the name is, not what it might be a typo of.
  if ((frames_.empty() || !frames_.back().fn) && p_.model)
    for (const Decl& d : p_.model->decls)
      if ((d.kind == DeclKind::Dim || d.kind == DeclKind::Const || d.kind == DeclKind::DType) && d.name == name &&
          d.name_span.file == span.file &&
          (d.name_span.line > span.line || (d.name_span.line == span.line && d.name_span.col > span.col)))
        return err(span, fmt::format("unknown name '{}' here: it is declared below, at line {}, and the model's dims, "
                                     "consts and dtypes are bound in order",
                                     name, d.name_span.line));
  return err(span, "unknown name '" + name + "'" + did_you_mean(name, std::move(near)));
}

void Elaborator::exec_let(const Stmt& s) {
  bool in_fn = frames_.back().fn != nullptr;
  const std::vector<std::string> names = s.names.empty() ? std::vector<std::string>{s.name} : s.names;
  const std::vector<Span> spans = s.names.empty() ? std::vector<Span>{s.name_span} : s.name_spans;
  const std::string prefix = cur_layer_ >= 0 ? "l" + std::to_string(cur_layer_ + layer_lo_) + "." : "";
  if (!in_fn) stmt_name_ = prefix + s.name;
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string& name = names[k];
    if (!in_fn && (globals_.count(name) || params_.count(name) || states_.count(name))) {
      err(spans[k], "'" + name + "' is a " +
                        (params_.count(name) ? std::string("param") : states_.count(name) ? std::string("state") : global_kind_[name]) +
                        " of the model; bind a different name");
      return;
    }
    if (resolve_dtype(name) && !globals_.count(name)) {
      err(spans[k], "'" + name + "' is a dtype name; bind a different name");
      return;
    }
    if (auto it = frames_.back().vars.find(name); it != frames_.back().vars.end() && it->second.kind == K::Layer) {
      err(spans[k], "'" + name + "' is the layer variable; bind a different name");
      return;
    }
  }
  Value v = eval(*s.value);
  if (v.kind == K::Object || v.kind == K::Null) {
    err(s.value->span, "cannot bind " + show(v));
    v = Value::error();
  }
  std::vector<Value> values;
  if (names.size() == 1) {
    if (v.kind == K::Tuple) {
      err(s.name_span, "the value has " + std::to_string(v.items.size()) + " results " + show(v) +
                           ": bind one name each (`a, b = ...`)");
      v = Value::error();
    }
    values.push_back(std::move(v));
  } else if (v.kind == K::Tuple && v.items.size() == names.size()) {
    values = std::move(v.items);
  } else {
    if (!v.is_error())
      err(s.value->span, std::to_string(names.size()) + " names to bind, but the value is " +
                             (v.kind == K::Tuple ? "of " + std::to_string(v.items.size()) + " results " : "") + show(v));
    values.assign(names.size(), Value::error());
  }
  for (size_t k = 0; k < names.size(); ++k) {
    if (!in_fn) stmt_name_ = prefix + names[k];
    if (values[k].is_tensor() && !in_fn) record(s, stmt_name_, show(values[k].dtype, values[k].shape));
    frames_.back().vars[names[k]] = std::move(values[k]);  // eval() may push frames: `vars` can dangle
  }
}

// `require cond, "message"` in a body: a compile-time check of this point of the program (in a
// layer body, of this layer: `require kind == "sliding_attention" || kind == "full_attention"`).
// Returns whether it holds (false too where its condition is an error, already reported).
bool Elaborator::exec_require(const Stmt& s) {
  Value c = eval(*s.value);
  std::string message;
  const bool message_ok = require_message(s.message.get(), message);
  if (c.is_error() || !message_ok) return false;
  if (c.kind != K::Bool) {
    err(s.value->span, "require needs a compile-time bool condition, found " + show(c));
    return false;
  }
  if (c.b) return true;
  std::string msg = "requirement failed";
  if (cur_layer_ >= 0) msg += fmt::format(" in layer {}", cur_layer_ + layer_lo_);
  if (s.message) msg += ": " + message;
  err(s.span, msg);
  return false;
}

void Elaborator::exec_for(const Stmt& s) {
  if (s.range != "layers") {
    err(s.range_span, "expected 'layers' after 'in', found '" + s.range + "'");
    return;
  }
  if (!has_layers_) {
    if (layers_failed_) return;  // the layers block's own error says why
    if (p_.main.dropped_before("layers", s.range_span)) return;  // a syntax error swallowed it
    err(s.range_span, "the model has no layers block to iterate");
    return;
  }
  auto& vars = frames_.back().vars;
  if (vars.count(s.name) || globals_.count(s.name) || params_.count(s.name) || states_.count(s.name)) {
    err(s.name_span, "loop variable '" + s.name + "' is already bound");
    return;
  }
  for (size_t l = 0; l < layer_params_.size(); ++l) {
    Value layer;
    layer.kind = K::Layer;
    layer.i = layer_lo_ + static_cast<int64_t>(l);
    frames_.back().vars[s.name] = layer;
    cur_layer_ = static_cast<int32_t>(l);
    recording_ = l == 0;
    size_t before = diags_.count();
    exec_block(s.body, false);
    // A mistake in the body repeats in every layer: report it from the first only.
    if (diags_.count() > before) break;
  }
  frames_.back().vars.erase(s.name);
  cur_layer_ = -1;
  recording_ = true;
}

void Elaborator::exec_write(const Stmt& s) {
  const Expr& t = *s.target;
  if (t.kind != ExprKind::Index) {
    err(t.span, "cannot assign to this expression: a write is `state[...] = value`, a binding is `name = value`");
    return;
  }
  const Expr& base = *t.args[0];
  if (base.kind != ExprKind::Name) {
    err(base.span, "cannot write into this expression: only a state, indexed, can be written");
    return;
  }
  auto sit = states_.find(base.text);
  if (sit == states_.end()) {
    bool known = frames_.back().vars.count(base.text) || globals_.count(base.text) || params_.count(base.text);
    if (known)
      err(base.span, "cannot write to '" + base.text + "': it is not a state (only `state` declarations can be written)");
    else
      unknown_name(base.span, base.text);
    return;
  }
  StateSlot& st = sit->second;
  stmt_name_ = (cur_layer_ >= 0 ? "l" + std::to_string(cur_layer_ + layer_lo_) + "." : "") + st.name;
  // A write that fails leaves the state unwritten: its reads further on are error values, silent,
  // not mismatches that only repeat this one (attention over a cache declared [.., D] for Dh).
  if (st.ok && !write_state(s, st)) st.ok = false;
}

// The checks and the StateWrite node of `state[...] = value` into st; false after an error.
bool Elaborator::write_state(const Stmt& s, StateSlot& st) {
  const Expr& t = *s.target;
  // state[i0, .., :, pos, :] = value: leading constant indices, one i32 position vector, ':' elsewhere.
  const char* form = "unsupported state write: write `state[i, ..., :, pos, :] = value` (constant leading indices, one i32 index vector, ':' elsewhere)";
  std::vector<int64_t> fixed;
  size_t k = 1;
  for (; k < t.args.size(); ++k) {
    const Expr& x = *t.args[k];
    if (x.kind == ExprKind::Slice || x.kind == ExprKind::Ellipsis) break;
    Value v = eval(x);
    if (v.is_error()) return false;
    if (v.kind == K::Tensor) break;
    if (v.kind != K::Int && v.kind != K::Layer) {
      err(x.span, "expected an integer index, ':' or an i32 index vector, found " + show(v));
      return false;
    }
    ir::Dim d = st.shape[std::min(fixed.size(), st.shape.size() - 1)];
    if (fixed.size() >= st.shape.size() || v.i < 0 || v.i >= d.coeff) {
      err(x.span, fmt::format("index {} is out of range for state {} {}", v.i, st.name, show(st.dtype, st.shape)));
      return false;
    }
    fixed.push_back(v.i);
  }
  size_t remaining = st.shape.size() - std::min(fixed.size(), st.shape.size());
  if (t.args.size() - k != remaining || remaining == 0) {
    err(t.span, form + std::string(fmt::format(" ({} is rank {})", st.name, st.shape.size())));
    return false;
  }
  int32_t axis = -1;
  Value idx;
  Span idx_span;
  for (size_t j = k; j < t.args.size(); ++j) {
    const Expr& x = *t.args[j];
    if (x.kind == ExprKind::Slice && !x.args[0] && !x.args[1] && !x.args[2]) continue;
    if (x.kind == ExprKind::Slice || x.kind == ExprKind::Ellipsis || axis >= 0) {
      err(x.span, form);
      return false;
    }
    idx = eval(x);
    if (idx.is_error()) return false;
    if (!idx.is_tensor() || idx.dtype != DType::I32 || idx.shape.size() != 1) {
      err(x.span, "a state write index must be an i32 vector, found " + show(idx));
      return false;
    }
    axis = static_cast<int32_t>(j - k);
    idx_span = x.span;
  }
  if (axis < 0) {
    err(t.span, form);
    return false;
  }
  // Batched steps page a state along the axis its writes scatter on, one row per position of the
  // sequence (docs/language.md, "Batched steps"), so that axis holds S positions. One of another
  // size checked and then failed at run time, once a sequence outgrew it.
  const ir::Dim positions = st.shape[fixed.size() + static_cast<size_t>(axis)];
  if (const Value& S = globals_["S"]; S.kind == K::Int && !(positions == ir::Dim::constant(S.i))) {
    diags_.error(idx_span,
                 fmt::format("state {} is written along an axis of {} positions; a state holds each sequence's "
                             "positions along an axis of size S = {} (the KV-cache capacity)",
                             st.name, format_dim(positions, sym_names_), S.i),
                 {{st.span, "state " + st.name + " " + show(st.dtype, st.shape) + " is declared here"}});
    return false;
  }
  ir::Shape expect(st.shape.begin() + static_cast<std::ptrdiff_t>(fixed.size()), st.shape.end());
  expect[static_cast<size_t>(axis)] = idx.shape[0];
  Value v = eval(*s.value);
  if (v.is_error()) return false;
  if (!v.is_tensor()) {
    err(s.value->span, "a state write needs a tensor value, found " + show(v));
    return false;
  }
  // A write stores in the state's dtype: floats convert (as torch's index_copy_ does); other
  // dtypes must match.
  if (v.dtype != st.dtype && !(is_float(v.dtype) && is_float(st.dtype))) {
    err(s.value->span, "dtype mismatch in state write: " + show(v) + " into " + st.name + " " + show(st.dtype, st.shape));
    return false;
  }
  if (!(v.shape == expect)) {
    diags_.error(s.value->span,
                 "state write value has shape " + show(v.shape) + ", expected " + show(expect) + " for " + st.name +
                     " " + show(st.dtype, st.shape),
                 {{st.span, "state " + st.name + " is declared here"}});
    return false;
  }
  Value cur = state_value(st);
  ir::Attrs a;
  a.fixed = fixed;
  a.axis = axis;
  st.version = emit(ir::Op::StateWrite, st.dtype, st.shape, {cur.id, cast(v.id, st.dtype), idx.id}, a);
  record(s, stmt_name_, "write " + show(st.dtype, expect));
  return true;
}

// ---- public API

CheckOutcome check_source(const std::string& file_name, const std::string& text, const nlohmann::json& config,
                          const BindOptions& opts) {
  CheckOutcome out;
  auto program = load_program(file_name, text);
  if (program->model && config.is_object()) {
    Elaborator(*program, config, opts, out.report).run();
  } else if (!config.is_object() && program->model) {
    program->diags.error(program->model->span, "config.json must be a JSON object");
  }
  out.ok = !program->diags.has_errors();
  out.diagnostics = program->diags.list();
  if (!out.ok) out.rendered = program->diags.render();
  return out;
}

CheckReport check_file(const std::filesystem::path& lg_file, const nlohmann::json& config, const BindOptions& opts) {
  std::ifstream in(lg_file, std::ios::binary);
  if (!in) throw Error("cannot read " + lg_file.string());
  CheckOutcome out = check_source(lg_file.string(), read_text_input(in, lg_file.string()), config, opts);
  if (!out.ok) {
    std::string msg = out.rendered;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw Error(lg_file.string() + " does not check:\n" + msg);
  }
  return std::move(out.report);
}

ir::Graph lower_file(const std::filesystem::path& lg_file, const nlohmann::json& config, const BindOptions& opts) {
  return std::move(check_file(lg_file, config, opts).graph);
}

}  // namespace lg::lang
