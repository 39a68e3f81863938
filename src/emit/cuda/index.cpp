// Index arithmetic: the helpers of index.h, and the lambdas of the view ops and of gathers (a
// view is index arithmetic, never a copy).
#include "emit/cuda/index.h"

#include <algorithm>

#include "emit/cuda/renderer.h"
#include "support/error.h"

namespace lg::emit::cuda {

namespace {
thread_local KernelContext current;
}

const KernelContext& kernel_context() { return current; }
KernelScope::KernelScope(KernelContext ctx) : saved_(current) { current = ctx; }
KernelScope::~KernelScope() { current = saved_; }

std::string dim(const ir::Dim& d) {
  if (d.is_const()) return std::to_string(d.coeff) + "L";
  // A kernel's T is the row count of its launch: a dim of the other runtime symbol has no value
  // in it. Row-major offsets never need a leading dim, so a gather of T rows for B outputs is fine.
  if (d.sym != current.rows)
    throw Error("emit: internal error: a kernel over runtime dim #" + std::to_string(current.rows) +
                " needs the extent of runtime dim #" + std::to_string(d.sym));
  return d.coeff == 1 ? "T" : "(" + std::to_string(d.coeff) + "L * T)";
}

std::string idx_name(size_t k) { return "i" + std::to_string(k); }

std::vector<std::string> idx_names(size_t rank) {
  std::vector<std::string> ix;
  for (size_t k = 0; k < rank; ++k) ix.push_back(idx_name(k));
  return ix;
}

std::string linear(const ir::Shape& shape, const std::vector<std::string>& ix) {
  if (shape.empty()) return "0L";
  std::string s = "(" + ix[0] + ")";
  for (size_t k = 1; k < shape.size(); ++k) s = "(" + s + " * " + dim(shape[k]) + " + (" + ix[k] + "))";
  return s;
}

std::string delinear(const ir::Shape& shape, const std::string& lin, const std::vector<std::string>& names,
                     const std::string& tmp) {
  std::string s = "long " + tmp + " = " + lin + "; (void)" + tmp + ";";
  for (size_t k = shape.size(); k-- > 0;) {
    if (k == 0) {
      s += " long " + names[k] + " = " + tmp + ";";
    } else {
      s += " long " + names[k] + " = " + tmp + " % " + dim(shape[k]) + "; " + tmp + " /= " + dim(shape[k]) + ";";
    }
  }
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

namespace {

// Trailing dims the reshape keeps map index to index; only the leading ones go through a linear
// index (and none at all when what is left is only 1s, as in a squeeze): 64-bit division is not
// free, and K/V tiles of the prefill attention are read through exactly such views.
std::string reshape_body(const ir::Graph& g, const ir::Node& n, const std::vector<std::string>& ix,
                         const LambdaNames& name) {
  ir::ValueId o = n.operands[0];
  const ir::Shape& osh = g.at(o).shape;
  size_t keep = 0;
  while (keep < osh.size() && keep < n.shape.size() && osh[osh.size() - 1 - keep] == n.shape[n.shape.size() - 1 - keep])
    ++keep;
  const ir::Shape opre(osh.begin(), osh.end() - static_cast<std::ptrdiff_t>(keep));
  const ir::Shape npre(n.shape.begin(), n.shape.end() - static_cast<std::ptrdiff_t>(keep));
  const std::vector<std::string> ipre(ix.begin(), ix.end() - static_cast<std::ptrdiff_t>(keep));
  std::vector<std::string> oi;
  for (size_t k = 0; k < opre.size(); ++k) oi.push_back("o" + std::to_string(k));
  const bool ones = std::all_of(opre.begin(), opre.end(), [](const ir::Dim& d) { return d == ir::Dim::constant(1); });
  std::string b;
  if (ones) {
    for (auto& x : oi) x = "0L";
  } else if (!opre.empty()) {
    b += delinear(opre, npre.empty() ? "0L" : linear(npre, ipre), oi, "lin") + " ";
  }
  for (size_t k = 0; k < keep; ++k) oi.push_back(ix[ix.size() - keep + k]);
  return b + "return " + call(name, o, oi) + ";";
}

// Concat: the operand whose range along the axis holds the index, read at the index less the
// lengths before it.
std::string concat_body(const ir::Graph& g, const ir::Node& n, const std::vector<std::string>& ix,
                        const LambdaNames& name) {
  auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, n.shape.size()));
  std::string b, off = "0L";
  for (size_t j = 0; j < n.operands.size(); ++j) {
    ir::ValueId o = n.operands[j];
    std::vector<std::string> oi = ix;
    oi[axis] = ix[axis] + " - (" + off + ")";
    std::string end = off + " + " + dim(g.at(o).shape[axis]);
    if (j + 1 < n.operands.size()) b += "if (" + ix[axis] + " < " + end + ") ";
    b += "return " + call(name, o, oi) + "; ";
    off = end;
  }
  return b;
}

}  // namespace

std::string Renderer::view_body(int32_t s, ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name) {
  const ir::Node& n = g.at(v);
  switch (n.op) {
    case ir::Op::Gather: {
      // The row index clamped into the table (the CPU executors throw on it instead).
      ir::ValueId tab = n.operands[0], id = n.operands[1];
      size_t ri = g.at(id).shape.size();
      std::vector<std::string> ii(ix.begin(), ix.begin() + static_cast<std::ptrdiff_t>(ri));
      std::vector<std::string> ti = {"row"};
      for (size_t k = ri; k < ix.size(); ++k) ti.push_back(ix[k]);
      const ir::Dim& extent = g.at(tab).shape[0];
      // The batched program's row selection gathers B rows of a [T, ...] value by the step's `rows`
      // input, which the runtime builds and checks (step.cpp flatten): no clamp, and no T in a B kernel.
      if (!extent.is_const() && extent.sym != kernel_context().rows)
        return "long row = (long)" + call(name, id, ii) + "; return " + call(name, tab, ti) + ";";
      const std::string rows = dim(extent);
      return "long row = (long)" + call(name, id, ii) + "; row = row < 0 ? 0 : (row >= " + rows + " ? " + rows +
             " - 1 : row); return " + call(name, tab, ti) + ";";
    }
    case ir::Op::Reshape: return reshape_body(g, n, ix, name);
    case ir::Op::Permute: {
      std::vector<std::string> oi(n.attrs.perm.size());
      for (size_t k = 0; k < n.attrs.perm.size(); ++k) oi[static_cast<size_t>(n.attrs.perm[k])] = ix[k];
      return "return " + call(name, n.operands[0], oi) + ";";
    }
    case ir::Op::Slice: {
      // The layer slice of a state read from its buffer (`kcache[l]`) indexes with lg_l.
      auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, n.shape.size()));
      std::vector<std::string> oi = ix;
      const bool layer = axis == 0 && n.attrs.step == 1 && g.at(n.operands[0]).shape[0].is_const() &&
                         n.shape[0] == ir::Dim::constant(1) && is_state(n.operands[0]) &&
                         p.stage_of[static_cast<size_t>(n.operands[0])] != s &&
                         !p.is_inline[static_cast<size_t>(n.operands[0])];
      oi[axis] = (layer ? layer_index(n.attrs.start) : std::to_string(n.attrs.start) + "L") + " + " + ix[axis] + " * " +
                 std::to_string(n.attrs.step) + "L";
      return "return " + call(name, n.operands[0], oi) + ";";
    }
    case ir::Op::Concat: return concat_body(g, n, ix, name);
    default: break;
  }
  throw Error("emit: internal error: " + std::string(ir::op_name(n.op)) + " is not a view");
}

std::string Renderer::state_slice_base(ir::ValueId v) {
  const ir::Node& rs = g.at(v);
  if (rs.op != ir::Op::Reshape || !p.is_inline[static_cast<size_t>(v)] || rs.shape.size() != 3) return "";
  const ir::ValueId sl = rs.operands[0];
  const ir::Node& sn = g.at(sl);
  if (sn.op != ir::Op::Slice || !p.is_inline[static_cast<size_t>(sl)] || sn.attrs.step != 1 ||
      ir::positive_axis(sn.attrs.axis, sn.shape.size()) != 0 || sn.shape.size() != 4 || !(sn.shape[0] == ir::Dim::constant(1)))
    return "";
  const ir::ValueId st = sn.operands[0];
  if (p.is_inline[static_cast<size_t>(st)] || !is_state(st)) return "";
  const ir::Shape& ss = g.at(st).shape;
  for (size_t k = 1; k < 4; ++k)
    if (!ss[k].is_const() || !(ss[k] == rs.shape[k - 1])) return "";
  if (rs.shape[2].coeff % 8 != 0) return "";
  return "p" + std::to_string(arg(st, false)) + " + " + layer_index(sn.attrs.start) + " * " +
         std::to_string(ss[1].coeff * ss[2].coeff * ss[3].coeff) + "L";
}

}  // namespace lg::emit::cuda
