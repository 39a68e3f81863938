// The Renderer's kernel bookkeeping (parameters, buffers, loads, the lifted layer index) and the
// device lambda of every node a stage evaluates: a load for a value stored by another stage, the
// op table's expression for an elementwise node (expr.cpp), index arithmetic for a view
// (index.cpp), a loop for a reduction (element_stage.cpp).
#include "emit/cuda/renderer.h"

#include <cstdlib>

#include "emit/cuda/expr.h"

namespace lg::emit::cuda {

ir::ValueId buffer_node(const ir::Graph& g, ir::ValueId v) {
  while (g.at(v).op == ir::Op::StateWrite) v = g.at(v).operands[0];
  return v;
}

bool knob_off(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string(e) == "0";
}

bool early_launch() { return !knob_off("LG_COMPILED_EARLY_LAUNCH"); }

std::string Renderer::layer_index(int64_t v) {
  if (!lift_layer) return std::to_string(v) + "L";
  layer_values.insert(v);
  return "lg_l";
}

std::string Renderer::kernel(const std::string& bounds, const std::vector<std::string>& extra,
                             const std::string& comment, const std::string& body) const {
  std::vector<std::string> params;
  for (size_t i = 0; i < args.size(); ++i) params.push_back(param_decl(i));
  params.insert(params.end(), extra.begin(), extra.end());
  if (!layer_values.empty()) params.push_back("const long lg_l");
  params.push_back("const long T");
  return "extern \"C\" __global__ void " + bounds + " KERNEL_NAME(\n    " + join(params, ",\n    ") + ") {" +
         (comment.empty() ? "" : "  // " + comment) + "\n" + (body_waits ? "" : wait_previous_launch()) + body + "}\n";
}

std::string wait_previous_launch() {
  return std::string("  lg_wait_previous_launch();\n") + (early_launch() ? "  lg_launch_dependents();\n" : "");
}

size_t Renderer::arg(ir::ValueId node, bool written) {
  ir::ValueId b = buffer_node(g, node);
  auto it = arg_of.find(b);
  if (it != arg_of.end()) {
    args[it->second].written = args[it->second].written || written;
    return it->second;
  }
  arg_of[b] = args.size();
  args.push_back({b, written});
  return args.size() - 1;
}

std::string Renderer::param_decl(size_t i) const {
  const ir::Node& n = g.at(args[i].node);
  std::string ty;
  if (n.op == ir::Op::Input) ty = "const int* __restrict__";
  else if (n.op == ir::Op::Param) ty = n.dtype == DType::BF16 ? "const unsigned short* __restrict__" : "const float* __restrict__";
  else if (bf16_state(n)) ty = "unsigned short* __restrict__";
  else ty = args[i].written || n.op == ir::Op::State ? "float* __restrict__" : "const float* __restrict__";
  return ty + " p" + std::to_string(i);
}

std::string Renderer::load(ir::ValueId v, const std::string& off) {
  ir::ValueId b = buffer_node(g, v);
  std::string ptr = "p" + std::to_string(arg(b, false));
  const ir::Node& n = g.at(b);
  if (n.op == ir::Op::Input) return "(float)" + ptr + "[" + off + "]";
  if ((n.op == ir::Op::Param && n.dtype == DType::BF16) || bf16_state(n)) return "lg_bf16(" + ptr + "[" + off + "])";
  return ptr + "[" + off + "]";
}

std::vector<ir::ValueId> Renderer::closure(int32_t s) const { return closure(s, p.stages[static_cast<size_t>(s)].nodes); }

std::vector<ir::ValueId> Renderer::closure(int32_t s, const std::vector<ir::ValueId>& roots) const {
  // Iterative (a long elementwise chain in one stage must not exhaust the stack); the result is a
  // set, so the visiting order does not matter.
  std::set<ir::ValueId> seen;
  std::vector<ir::ValueId> todo(roots.rbegin(), roots.rend());
  while (!todo.empty()) {
    const ir::ValueId v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second || !here(s, v)) continue;
    for (ir::ValueId o : g.at(v).operands) todo.push_back(o);
  }
  return {seen.begin(), seen.end()};
}

LambdaNames Renderer::lambdas(int32_t s, const std::vector<ir::ValueId>& nodes, std::ostringstream& os,
                              const std::map<ir::ValueId, std::string>& dots) {
  LambdaNames name;
  int local = 0;
  for (ir::ValueId v : nodes) name[v] = "v" + std::to_string(local++);
  for (ir::ValueId v : nodes) {
    const ir::Node& n = g.at(v);
    const std::vector<std::string> ix = idx_names(n.shape.size());
    std::vector<std::string> params;
    for (const auto& i : ix) params.push_back("long " + i);
    const bool computed = here(s, v);
    // A write (state_store) or the attention loop itself, not a value.
    if (computed && (n.op == ir::Op::StateWrite || n.op == ir::Op::Attention)) continue;
    std::string memo_decl, body;
    if (!computed) {
      body = "return " + load(v, linear(n.shape, ix)) + ";";
    } else if (ir::is_elementwise(n.op)) {
      // Operands broadcast: a size-1 dim of an operand reads index 0.
      std::vector<std::string> xs;
      for (ir::ValueId o : n.operands) {
        const auto& osh = g.at(o).shape;
        std::vector<std::string> r;
        size_t shift = n.shape.size() - osh.size();
        for (size_t k = 0; k < osh.size(); ++k)
          r.push_back(osh[k] == ir::Dim::constant(1) && !(n.shape[k + shift] == ir::Dim::constant(1)) ? "0L" : ix[k + shift]);
        xs.push_back(call(name, o, r));
      }
      const bool ints = n.operands.size() >= 2 && !is_float(g.at(n.operands[0]).dtype) && !is_float(g.at(n.operands[1]).dtype);
      body = "return " + elementwise_expr(n, ints, xs) + ";";
    } else if (n.op == ir::Op::Const) {
      body = "return " + lit(n.attrs.scalar) + ";";
    } else if (n.op == ir::Op::Arange) {
      body = "return (float)i0;";
    } else if (ir::is_reduce(n.op)) {
      body = reduce_body(v, ix, name, memo_decl);
    } else if (n.op == ir::Op::TopK || n.op == ir::Op::ArgTopK) {
      body = topk_body(v, ix, name, memo_decl);
    } else if (n.op == ir::Op::MoeGateUp || n.op == ir::Op::MoeDown) {
      // The experts stage's loop computes it into a variable its epilogue lambdas read.
      auto it = dots.find(v);
      if (it == dots.end()) continue;
      body = "return " + it->second + ";";
    } else if (n.op == ir::Op::MatMul) {
      auto it = dots.find(v);
      if (it == dots.end()) throw Error("emit: internal error: matmul outside a GEMM stage");
      body = "return " + it->second + ";";
    } else {
      body = view_body(s, v, ix, name);
    }
    os << memo_decl << "  auto " << name[v] << " = [&](" << join(params) << ") -> float { " << body << " };\n";
  }
  return name;
}

}  // namespace lg::emit::cuda
