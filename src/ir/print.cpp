#include "ir/print.h"

#include <cstdio>
#include <string_view>

namespace lg::ir {

namespace {

std::string dim_string(const Graph& g, const Dim& d) {
  if (d.is_const()) return std::to_string(d.coeff);
  const auto s = static_cast<size_t>(d.sym);
  const std::string name = s < g.symbols.size() ? g.symbols[s].name : "?" + std::to_string(d.sym);
  return d.coeff == 1 ? name : std::to_string(d.coeff) + "*" + name;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

template <class T>
std::string list(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + std::to_string(v[k]);
  return out + "]";
}

/// The op-specific attributes, as " name=value ..." (empty for ops without any).
std::string attr_string(const Graph& g, const Node& n) {
  const Attrs& a = n.attrs;
  auto named = [&](const auto& infos) -> std::string {
    const auto i = static_cast<size_t>(a.index);
    return a.index >= 0 && i < infos.size() ? " " + infos[i].name : " #" + std::to_string(a.index);
  };
  switch (n.op) {
    case Op::Input: return named(g.inputs);
    case Op::Param: {
      const auto i = static_cast<size_t>(a.index);
      if (a.index >= 0 && i < g.params.size()) return " " + g.params[i].name + " \"" + g.params[i].tensor + "\"";
      return " #" + std::to_string(a.index);
    }
    case Op::State: return named(g.states);
    case Op::Const: return " " + number(a.scalar);
    case Op::ReduceSum:
    case Op::ReduceMax: return " axis=" + std::to_string(a.axis) + (a.keepdim ? " keepdim" : "");
    case Op::Permute: return " perm=" + list(a.perm);
    case Op::Slice:
      return " axis=" + std::to_string(a.axis) + " " + std::to_string(a.start) + ":" + std::to_string(a.stop) +
             (a.step != 1 ? ":" + std::to_string(a.step) : "");
    case Op::Concat: return " axis=" + std::to_string(a.axis);
    case Op::StateWrite:
      return " fixed=" + list(a.fixed) + " axis=" + std::to_string(a.axis) +
             (a.block_size ? " block=" + std::to_string(a.block_size) : "");
    case Op::TopK:
    case Op::ArgTopK: return " axis=" + std::to_string(a.axis);
    case Op::Attention:
      return " scale=" + number(a.scale) + " group=" + std::to_string(a.gqa_group) +
             (a.window ? " window=" + std::to_string(a.window) : "") + (a.softcap ? " softcap=" + number(a.softcap) : "") +
             (a.block_size ? " block=" + std::to_string(a.block_size) : "");
    default: return "";
  }
}

}  // namespace

std::string type_string(const Graph& g, DType dtype, const Shape& shape) {
  std::string out(dtype_name(dtype));
  out += "[";
  for (size_t k = 0; k < shape.size(); ++k) out += (k ? "," : "") + dim_string(g, shape[k]);
  return out + "]";
}

namespace {
// The span's file as the program was loaded from it, or its last component; "" for a span
// without one (a node or param a rewrite made).
std::string span_file(const Graph& g, const Span& span, bool basename) {
  if (span.file < 0 || static_cast<size_t>(span.file) >= g.files.size()) return "";
  std::string_view file = g.files[static_cast<size_t>(span.file)];
  if (const size_t slash = file.rfind('/'); basename && slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file);
}
}  // namespace

std::string span_text(const Graph& g, const Span& span) {
  const std::string file = span_file(g, span, false);
  return (file.empty() ? "<unknown>" : file) + ":" + std::to_string(span.line) + ":" + std::to_string(span.col);
}

std::string span_string(const Graph& g, const Span& span) {
  const std::string file = span_file(g, span, true);
  if (file.empty()) return "<unknown>";
  return file + ":" + std::to_string(span.line) + ":" + std::to_string(span.col);
}

std::string node_string(const Graph& g, ValueId id) {
  const Node& n = g.at(id);
  std::string out = "%" + std::to_string(id) + " = " + op_name(n.op) + " " + type_string(g, n.dtype, n.shape);
  for (size_t k = 0; k < n.operands.size(); ++k) out += (k ? ", %" : " %") + std::to_string(n.operands[k]);
  return out + attr_string(g, n);
}

std::string print(const Graph& g) {
  std::string out = "model " + g.model + "\n";
  for (size_t s = 0; s < g.symbols.size(); ++s)
    out += "symbol " + g.symbols[s].name + " <= " + std::to_string(g.symbols[s].max) + "\n";
  for (const auto& in : g.inputs) out += "input " + in.name + ": " + type_string(g, in.dtype, in.shape) + "\n";
  for (const auto& p : g.params)
    out += "param " + p.name + ": " + type_string(g, p.dtype, p.shape) + " = \"" + p.tensor + "\"" + (p.transposed ? ".T" : "") + "\n";
  for (const auto& st : g.states) out += "state " + st.name + ": " + type_string(g, st.dtype, st.shape) + "\n";
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    std::string line = node_string(g, static_cast<ValueId>(k));
    std::string note = n.name;
    if (n.span.file >= 0) {
      const std::string sp = span_string(g, n.span);
      note += (note.empty() ? "" : "  ") + sp.substr(0, sp.rfind(':'));
    }
    if (!note.empty()) {
      if (line.size() < 48) line.resize(48, ' ');
      line += "   # " + note;
    }
    out += line + "\n";
  }
  out += "return";
  for (size_t k = 0; k < g.outputs.size(); ++k) out += (k ? ", %" : " %") + std::to_string(g.outputs[k]);
  out += "\n";
  for (size_t s = 0; s < g.final_states.size(); ++s) {
    const std::string name = s < g.states.size() ? g.states[s].name : "?";
    out += "final " + name + " = %" + std::to_string(g.final_states[s]) + "\n";
  }
  return out;
}

}  // namespace lg::ir
