#include "ir/cpu_executor.h"

#include <fmt/format.h>

#include <new>
#include <string>
#include <utility>

#include "ir/cpu_moe.h"
#include "ir/cpu_ops.h"
#include "ir/print.h"
#include "ir/verify.h"
#include "support/error.h"

namespace lg::ir {

using cpu::Tensor;

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + std::to_string(s[k]);
  return out + "]";
}
}  // namespace

CpuExecutor::CpuExecutor(Graph graph, std::vector<Tensor> params) : graph_(std::move(graph)), params_(std::move(params)) {
  verify(graph_);
  if (params_.size() != graph_.params.size())
    throw Error("CPU executor: " + std::to_string(params_.size()) + " weights bound for " +
                std::to_string(graph_.params.size()) + " params");
  for (size_t p = 0; p < params_.size(); ++p) {
    const ParamInfo& info = graph_.params[p];
    const std::vector<int64_t> want = concrete(info.shape);
    if (params_[p].shape != want || params_[p].dtype != cpu::exec_dtype(info.dtype))
      throw Error("param " + info.name + " (tensor \"" + info.tensor + "\") is bound to " +
                  std::string(dtype_name(params_[p].dtype)) + shape_str(params_[p].shape) + ", the program declares " +
                  type_string(graph_, info.dtype, info.shape));
  }
  symbols_.assign(graph_.symbols.size(), 0);
  last_use_.assign(graph_.nodes.size(), 0);
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (ValueId o : graph_.nodes[k].operands) last_use_[static_cast<size_t>(o)] = k;
  // Outputs and final states outlive the loop.
  is_output_.assign(graph_.nodes.size(), false);
  for (ValueId o : graph_.outputs) {
    last_use_[static_cast<size_t>(o)] = graph_.nodes.size();
    is_output_[static_cast<size_t>(o)] = true;
  }
  for (ValueId o : graph_.final_states) last_use_[static_cast<size_t>(o)] = graph_.nodes.size();
  reset();
}

void CpuExecutor::reset() {
  states_.clear();
  for (const StateInfo& s : graph_.states) states_.push_back(Tensor::zeros(s.dtype, concrete(s.shape)));
}

std::vector<int64_t> CpuExecutor::concrete(const Shape& s) const {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.is_const() ? d.coeff : d.coeff * symbols_.at(static_cast<size_t>(d.sym)));
  return out;
}

void CpuExecutor::bind_symbols(std::span<const Tensor> inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw Error("the forward takes " + std::to_string(graph_.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  std::vector<bool> bound(symbols_.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputInfo& info = graph_.inputs[i];
    const Tensor& t = inputs[i];
    const std::string where = "input " + info.name + " (declared " + type_string(graph_, info.dtype, info.shape) + ")";
    if (t.rank() != static_cast<int64_t>(info.shape.size()) || t.dtype != cpu::exec_dtype(info.dtype))
      throw Error(where + " got " + std::string(dtype_name(t.dtype)) + shape_str(t.shape));
    for (size_t k = 0; k < info.shape.size(); ++k) {
      const Dim& d = info.shape[k];
      const int64_t n = t.shape[k];
      if (d.is_const()) {
        if (n != d.coeff) throw Error(where + " got " + shape_str(t.shape));
        continue;
      }
      const auto s = static_cast<size_t>(d.sym);
      if (d.coeff <= 0 || n % d.coeff != 0) throw Error(where + " got " + shape_str(t.shape));
      const int64_t v = n / d.coeff;
      if (bound[s] && symbols_[s] != v)
        throw Error(where + " binds " + graph_.symbols[s].name + " = " + std::to_string(v) + ", another input bound it to " +
                    std::to_string(symbols_[s]));
      const SymbolInfo& sym = graph_.symbols[s];
      if (v < 1 || v > sym.max)
        throw Error(where + ": " + sym.name + " = " + std::to_string(v) + " is outside 1.." + std::to_string(sym.max));
      symbols_[s] = v;
      bound[s] = true;
    }
  }
  for (size_t s = 0; s < bound.size(); ++s)
    if (!bound[s]) throw Error("runtime dim " + graph_.symbols[s].name + " is not bound by any input's shape");
}

std::vector<Tensor> CpuExecutor::run(std::span<const Tensor> inputs) { return run_impl(inputs, false); }

std::vector<Tensor> CpuExecutor::run_last_position(std::span<const Tensor> inputs) { return run_impl(inputs, true); }

bool CpuExecutor::last_row_only(size_t id) const {
  const Node& n = graph_.nodes[id];
  return last_only_ && is_output_[id] && n.op == Op::MatMul && graph_.at(n.operands[0]).shape.size() == 2;
}

std::vector<Tensor> CpuExecutor::run_impl(std::span<const Tensor> inputs, bool last_only) {
  last_only_ = last_only;
  bind_symbols(inputs);
  const size_t n = graph_.nodes.size();
  std::vector<Tensor> values(n);
  // The executor lends the state buffers to the graph for the step, so that the only owner of
  // an unread version is the graph and StateWrite can update it in place.
  std::vector<Tensor> lent = std::move(states_);
  states_.clear();
  try {
    for (size_t k = 0; k < n; ++k) {
      const Node& node = graph_.nodes[k];
      if (node.op == Op::State) {
        values[k] = std::move(lent.at(static_cast<size_t>(node.attrs.index)));
      } else if (node.op == Op::Input) {
        values[k] = inputs[static_cast<size_t>(node.attrs.index)];
      } else {
        try {
          values[k] = eval(k, values);
        } catch (const Error& e) {
          throw Error(span_string(graph_, node.span) + ": " + node_string(graph_, static_cast<ValueId>(k)) +
                      (node.name.empty() ? "" : " (" + node.name + ")") + ": " + e.what());
        } catch (const std::bad_alloc&) {
          // A program can pass lg check with a value too large for this machine (a broadcast of
          // 2^45 elements): name the statement rather than die of a bare std::bad_alloc.
          const std::vector<int64_t> shape = concrete(node.shape);
          double elements = 1;
          for (int64_t d : shape) elements *= static_cast<double>(d);
          throw Error(fmt::format("{}: {}: out of memory computing its {}{} ({:.3g} elements)",
                                  span_string(graph_, node.span), node_string(graph_, static_cast<ValueId>(k)),
                                  dtype_name(cpu::exec_dtype(node.dtype)), shape_str(shape), elements));
        }
      }
      for (ValueId o : node.operands)
        if (last_use_[static_cast<size_t>(o)] == k) values[static_cast<size_t>(o)] = Tensor{};
    }
  } catch (...) {
    reset();
    throw;
  }
  std::vector<Tensor> outs;
  for (ValueId o : graph_.outputs) outs.push_back(values[static_cast<size_t>(o)]);
  for (size_t s = 0; s < graph_.final_states.size(); ++s) {
    Tensor t = values[static_cast<size_t>(graph_.final_states[s])];
    states_.push_back(t.is_contiguous() && t.offset == 0 ? std::move(t) : t.clone());
  }
  return outs;
}

Tensor CpuExecutor::eval(size_t id, std::vector<Tensor>& values) {
  const Node& node = graph_.nodes[id];
  const Attrs& a = node.attrs;
  auto arg = [&](size_t k) -> const Tensor& { return values[static_cast<size_t>(node.operands[k])]; };
  Tensor out;
  if (is_unary(node.op)) {
    out = cpu::unary(node.op, arg(0), node.dtype);
  } else if (is_binary(node.op)) {
    out = cpu::binary(node.op, arg(0), arg(1), node.dtype);
  } else {
    switch (node.op) {
      case Op::Input: throw Error("internal: inputs are bound by run()");
      case Op::Param: out = params_.at(static_cast<size_t>(a.index)); break;
      case Op::State: throw Error("internal: states are lent by run()");
      case Op::Const:
        if (cpu::exec_dtype(node.dtype) == DType::F32) out = Tensor::from_f32({}, {static_cast<float>(a.scalar)});
        else {
          out = Tensor::from_i32({}, {static_cast<int32_t>(a.scalar)});
          out.dtype = cpu::exec_dtype(node.dtype);
        }
        break;
      case Op::Arange: out = cpu::arange(concrete(node.shape)[0]); break;
      case Op::Where: out = cpu::where(arg(0), arg(1), arg(2), node.dtype); break;
      case Op::ReduceSum:
      case Op::ReduceMax: out = cpu::reduce(node.op, arg(0), a.axis, a.keepdim); break;
      case Op::MatMul:
        if (last_row_only(id)) {
          const Tensor& x = arg(0);
          out = cpu::matmul(cpu::slice(x, 0, x.shape[0] - 1, x.shape[0], 1), arg(1));
        } else {
          out = cpu::matmul(arg(0), arg(1));
        }
        break;
      case Op::Gather: out = cpu::gather(arg(0), arg(1)); break;
      case Op::Reshape: out = cpu::reshape(arg(0), concrete(node.shape)); break;
      case Op::Permute: out = cpu::permute(arg(0), a.perm); break;
      case Op::Slice: out = cpu::slice(arg(0), a.axis, a.start, a.stop, a.step); break;
      case Op::Concat: {
        std::vector<Tensor> xs;
        for (size_t k = 0; k < node.operands.size(); ++k) xs.push_back(arg(k));
        out = cpu::concat(xs, a.axis);
        break;
      }
      case Op::StateWrite: {
        // Hand the old version over when this is its last reader, so the write can be in place.
        const auto sid = static_cast<size_t>(node.operands[0]);
        Tensor state = last_use_[sid] == id ? std::move(values[sid]) : values[sid];
        if (node.operands.size() == 5) {
          const cpu::Paging paging(arg(3), arg(4), a.block_size);
          out = cpu::state_write(std::move(state), arg(1), arg(2), a.fixed, a.axis, &paging);
        } else {
          out = cpu::state_write(std::move(state), arg(1), arg(2), a.fixed, a.axis);
        }
        break;
      }
      case Op::Attention:
        if (node.operands.size() == 6) {
          const cpu::Paging paging(arg(4), arg(5), a.block_size);
          out = cpu::attention(arg(0), arg(1), arg(2), arg(3), a.scale, a.gqa_group, &paging, a.window, a.softcap);
        } else {
          out = cpu::attention(arg(0), arg(1), arg(2), arg(3), a.scale, a.gqa_group, nullptr, a.window, a.softcap);
        }
        break;
      case Op::TopK:
      case Op::ArgTopK: {
        const Tensor& x = arg(0);
        const auto axis = static_cast<size_t>(positive_axis(a.axis, node.shape.size()));
        out = cpu::topk(x, concrete(node.shape)[axis], a.axis, node.op == Op::ArgTopK);
        break;
      }
      case Op::MoeGateUp: out = cpu::moe_gate_up(arg(0), arg(1), arg(2), arg(3)); break;
      case Op::MoeDown: out = cpu::moe_down(arg(0), arg(1), arg(2), arg(3)); break;
      default: throw Error("the CPU executor has no implementation of this op");
    }
  }
  // Every value must come out with the type the graph declares: a mismatch is a bug in the front
  // end or here, and catching it at the node beats a wrong answer downstream.
  std::vector<int64_t> want = concrete(node.shape);
  if (last_row_only(id)) want[0] = 1;
  if (out.shape != want || out.dtype != cpu::exec_dtype(node.dtype))
    throw Error("computed " + std::string(dtype_name(out.dtype)) + shape_str(out.shape) + ", the graph declares " +
                std::string(dtype_name(cpu::exec_dtype(node.dtype))) + shape_str(want));
  return out;
}

}  // namespace lg::ir
