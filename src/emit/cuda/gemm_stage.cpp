// GEMM stages: the matmuls of the stage grouped by shared epilogue (q, k and v each alone; gate
// with up, joined by silu(gate) * up), one loop over every group's outputs, a warp per output
// element. The dot products are the decode GEMV's (gemv.cpp) in the fused kernel, which serves
// T = 1 and every T without a prefill form, or read back from cuBLASLt's outputs in the prefill
// epilogue (scratch_dots; gemm_prefill.cpp). Lane 0 runs the epilogue: stores and cache writes.
#include <algorithm>
#include <cstdlib>

#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

ir::ValueId through_float_casts(const lift::StagedProgram& p, ir::ValueId v) {
  const ir::Graph& g = p.graph;
  while (g.at(v).op == ir::Op::Cast && p.is_inline[static_cast<size_t>(v)] && is_float(g.at(v).dtype) &&
         is_float(g.at(g.at(v).operands[0]).dtype))
    v = g.at(v).operands[0];
  return v;
}

ir::ValueId transposed_bf16_weight(const lift::StagedProgram& p, ir::ValueId a, ir::ValueId b) {
  const ir::Graph& g = p.graph;
  const ir::ValueId bw = through_float_casts(p, b);
  const ir::Node& bn = g.at(bw);
  const auto& sa = g.at(a).shape;
  bool fast = bn.op == ir::Op::Permute && p.is_inline[static_cast<size_t>(bw)] && g.at(b).shape.size() == 2 &&
              bn.attrs.perm == std::vector<int32_t>{1, 0} && g.at(bn.operands[0]).op == ir::Op::Param &&
              g.at(bn.operands[0]).dtype == DType::BF16 && sa.back().is_const() && sa.back().coeff % 8 == 0;
  return fast ? bn.operands[0] : -1;
}

ir::ValueId Renderer::stored_row(int32_t s, ir::ValueId a) const {
  const ir::ValueId v = through_float_casts(p, a);
  const ir::Node& n = g.at(v);
  if (p.is_inline[static_cast<size_t>(v)] || p.stage_of[static_cast<size_t>(v)] == s || p.stage_of[static_cast<size_t>(v)] < 0)
    return -1;
  if (n.op == ir::Op::StateWrite || n.dtype != DType::F32 || !(n.shape == g.at(a).shape)) return -1;
  return v;
}

namespace {

/// The matmuls of a GEMM stage, the outputs (stores, then cache writes), the matmuls each node
/// depends on (through stage and inline nodes), and a union-find over the matmuls that an
/// epilogue node joins.
struct GemmGroups {
  std::vector<ir::ValueId> mms, outs;
  std::map<ir::ValueId, std::set<ir::ValueId>> dep;
  std::map<ir::ValueId, ir::ValueId> root;
  ir::ValueId find(ir::ValueId m) { return root[m] == m ? m : root[m] = find(root[m]); }
};

/// dep[v] for v and everything it reaches (iterative: a long epilogue chain must not exhaust the
/// stack).
void gemm_deps(const lift::StagedProgram& p, int32_t s, ir::ValueId v0, GemmGroups& gg) {
  const ir::Graph& g = p.graph;
  std::vector<std::pair<ir::ValueId, bool>> todo{{v0, false}};
  while (!todo.empty()) {
    const auto [v, expanded] = todo.back();
    todo.pop_back();
    if (gg.dep.count(v)) continue;
    const ir::Node& n = g.at(v);
    const bool own_mm = n.op == ir::Op::MatMul && p.stage_of[static_cast<size_t>(v)] == s;
    const bool walk = !own_mm && (p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)]);
    // The old version a state write replaces is not a dependency.
    auto operands = [&] {
      std::vector<ir::ValueId> os;
      for (ir::ValueId o : n.operands)
        if (!(n.op == ir::Op::StateWrite && o == n.operands[0])) os.push_back(o);
      return os;
    };
    if (walk && !expanded) {
      todo.push_back({v, true});
      for (ir::ValueId o : operands()) todo.push_back({o, false});
      continue;
    }
    std::set<ir::ValueId> d;
    if (own_mm) d.insert(v);
    if (walk)
      for (ir::ValueId o : operands()) d.insert(gg.dep.at(o).begin(), gg.dep.at(o).end());
    gg.dep[v] = std::move(d);
  }
}

GemmGroups gemm_groups(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  GemmGroups gg;
  for (ir::ValueId v : st.nodes)
    if (g.at(v).op == ir::Op::MatMul) gg.mms.push_back(v);
  for (ir::ValueId m : gg.mms) gg.root[m] = m;
  gg.outs.assign(st.stores.begin(), st.stores.end());
  for (ir::ValueId v : st.nodes)
    if (g.at(v).op == ir::Op::StateWrite) gg.outs.push_back(v);
  for (ir::ValueId v : gg.outs) {
    gemm_deps(p, s, v, gg);
    const auto& d = gg.dep.at(v);
    if (d.empty()) throw Error("emit: stage " + std::to_string(s) + " (gemm) has an output that uses none of its GEMMs");
    for (ir::ValueId m : d) gg.root[gg.find(m)] = gg.find(*d.begin());
  }
  return gg;
}

/// One group's part of the stage's loop: its body for output element e, and its element count
/// (total as text; c * T^tp).
struct GroupLoop {
  std::string body, total;
  int64_t c = 1;
  int32_t tp = 0;
};

}  // namespace

void Renderer::gemm_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  GemmGroups gg = gemm_groups(p, s);
  const std::vector<ir::ValueId>& mms = gg.mms;
  std::map<ir::ValueId, std::string> dots;
  for (size_t j = 0; j < mms.size(); ++j) dots[mms[j]] = "dot" + std::to_string(j);
  if (scratch_dots)
    os << "  {  // gemm stage epilogue: dot products read from the GEMM's outputs\n"
       << "    const long warp = (long)blockIdx.x * blockDim.x + threadIdx.x;\n"
       << "    const long nwarps = (long)gridDim.x * blockDim.x;\n"
       << "    const int lane = 0;\n    float ";
  else
    os << "  {  // gemm stage\n"
       << "    const long warp = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
       << "    const long nwarps = ((long)gridDim.x * blockDim.x) >> 5;\n"
       << "    const int lane = threadIdx.x & 31;\n    float ";
  const char* knob = std::getenv("LG_COMPILED_GEMV_DECODE_ONLY");
  decode_only = !scratch_dots && has_gemm_prefill_form(p, s) && !(knob && std::string(knob) == "0");
  for (size_t j = 0; j < mms.size(); ++j) os << (j ? ", " : "") << "dot" << j << " = 0.0f";
  os << ";\n";
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, dots);
  std::map<ir::ValueId, std::pair<std::string, bool>> staged;
  if (decode_only) os << "    if (T != 1) __trap();  // T > 1 runs the prefill form (packs, cuBLASLt, epilogue)\n";
  if (!scratch_dots) {
    block_reductions(s, nodes, name, os);
    staged = stage_activations(s, mms, name, os);
  }
  std::set<ir::ValueId> groups;
  for (ir::ValueId m : mms) groups.insert(gg.find(m));
  std::vector<GroupLoop> loops;
  for (ir::ValueId gr : groups) {
    GroupLoop gl;
    std::ostringstream gs;
    const ir::Shape& shape = g.at(gr).shape;
    std::vector<ir::ValueId> members;
    for (ir::ValueId m : mms)
      if (gg.find(m) == gr) {
        if (!(g.at(m).shape == shape))
          throw Error("emit: stage " + std::to_string(s) + ": GEMMs joined by an epilogue differ in shape");
        members.push_back(m);
      }
    const std::vector<std::string> ix = idx_names(shape.size());
    gl.total = "1L";
    for (const auto& d : shape) {
      gl.total += " * " + dim(d);
      gl.c *= d.coeff;
      if (!d.is_const()) ++gl.tp;
    }
    gs << "      " << delinear(shape, "e", ix, "t_") << "\n";
    if (scratch_dots) {
      for (ir::ValueId m : members) {
        const size_t j = static_cast<size_t>(std::find(mms.begin(), mms.end(), m) - mms.begin());
        gs << "      " << dots[m] << " = d" << j << "[" << linear(shape, ix) << "];\n";
      }
    } else {
      gs << gemv_dots(members, ix, dots, staged, name);
    }
    gs << "      if (lane == 0) {\n";
    for (ir::ValueId v : gg.outs) {
      if (gg.find(*gg.dep.at(v).begin()) != gr) continue;
      if (g.at(v).op == ir::Op::StateWrite) {
        gs << gemm_cache_write(s, v, shape, ix, name);
        continue;
      }
      if (!(g.at(v).shape == shape))
        throw Error("emit: stage " + std::to_string(s) + ": a GEMM epilogue output differs from the GEMM's shape");
      gs << "        p" << arg(v, true) << "[" << linear(shape, ix) << "] = " << call(name, v, ix) << ";\n";
    }
    gs << "      }\n";
    gl.body = gs.str();
    loops.push_back(std::move(gl));
  }
  // Groups share one loop over all their outputs when they agree on the power of T, so that a
  // small group (k, v) does not leave most warps idle while it runs on its own.
  const bool merged = std::all_of(loops.begin(), loops.end(), [&](const GroupLoop& l) { return l.tp == loops[0].tp; });
  if (merged) {
    int64_t c = 0;
    std::string all = "0L";
    for (const GroupLoop& l : loops) {
      c += l.c;
      all += " + " + l.total;
    }
    wc.push_back(c);
    wp.push_back(loops.empty() ? 0 : loops[0].tp);
    os << "    for (long e_all = warp; e_all < " << all << "; e_all += nwarps) {\n";
    std::string before = "0L";
    for (size_t i = 0; i < loops.size(); ++i) {
      const std::string end = before + " + " + loops[i].total;
      os << "    " << (i ? "else " : "") << (i + 1 < loops.size() ? "if (e_all < " + end + ") " : "")
         << "{\n      const long e = e_all - (" << before << ");\n" << loops[i].body << "    }\n";
      before = end;
    }
    os << "    }\n";
  } else {
    for (const GroupLoop& l : loops) {
      wc.push_back(l.c);
      wp.push_back(l.tp);
      os << "    for (long e = warp; e < " << l.total << "; e += nwarps) {\n" << l.body << "    }\n";
    }
  }
  os << "  }\n";
}

}  // namespace lg::emit::cuda
