// GEMM stages: the matmuls of the stage grouped by shared epilogue (q, k and v each alone; gate
// with up, joined by silu(gate) * up), one loop over every group's outputs, a warp per output
// element (at T = 1, a few warps each when the stage has few outputs: decode_split). The dot
// products are the decode GEMV's (gemv.cpp) in the fused kernel, which serves T = 1 and every T
// without a prefill form, or read back from cuBLASLt's outputs in the prefill epilogue
// (scratch_dots; gemm_prefill.cpp). Lane 0 runs the epilogue: stores and cache writes.
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

namespace {

/// Shapes whose rows lie alike in a dense row-major buffer: the same leading (token) dim and the
/// same constant number of elements after it ([T, H, Dh] and [T, H * Dh]).
bool same_rows(const ir::Shape& x, const ir::Shape& y) {
  if (x.empty() || y.empty() || !(x[0] == y[0])) return false;
  auto tail = [](const ir::Shape& s) {
    int64_t n = 1;
    for (size_t k = 1; k < s.size(); ++k) n = s[k].is_const() ? n * s[k].coeff : -1;
    return n;
  };
  return tail(x) >= 0 && tail(x) == tail(y);
}

/// `v` seen through inline casts to f32 (from f32: no-ops; from bf16 or f16: exact widenings,
/// though stored_row then finds no f32 buffer behind them).
ir::ValueId through_widening_casts(const lift::StagedProgram& p, ir::ValueId v) {
  const ir::Graph& g = p.graph;
  while (g.at(v).op == ir::Op::Cast && p.is_inline[static_cast<size_t>(v)] && g.at(v).dtype == DType::F32 &&
         is_float(g.at(g.at(v).operands[0]).dtype))
    v = g.at(v).operands[0];
  return v;
}

}  // namespace

ir::ValueId Renderer::stored_row_through(int32_t s, ir::ValueId a, bool any_float_cast) const {
  // Through inline casts and row-major reshapes (views that keep every element's linear offset,
  // ir/ops.def): o_proj's `a.view(T, H*Dh)` is the attention's stored [T, H, Dh] output, read in
  // place. A staged copy of it cost every 8B layer's o_proj 17.6 us against the last layer's 12.2
  // (it reads a gather's stored row; Nsight, bench/RESULTS.md, session 19).
  const auto past_casts = [&](ir::ValueId v) {
    return any_float_cast ? through_float_casts(p, v) : through_widening_casts(p, v);
  };
  ir::ValueId v = past_casts(a);
  while (g.at(v).op == ir::Op::Reshape && p.is_inline[static_cast<size_t>(v)] && !knob_off("LG_COMPILED_ROW_VIEWS"))
    v = past_casts(g.at(v).operands[0]);
  const ir::Node& n = g.at(v);
  if (p.is_inline[static_cast<size_t>(v)] || p.stage_of[static_cast<size_t>(v)] == s || p.stage_of[static_cast<size_t>(v)] < 0)
    return -1;
  if (n.op == ir::Op::StateWrite || n.dtype != DType::F32 || !same_rows(n.shape, g.at(a).shape)) return -1;
  return v;
}

ir::ValueId Renderer::stored_row(int32_t s, ir::ValueId a) const { return stored_row_through(s, a, false); }

ir::ValueId Renderer::stored_row_rounded_to_bf16(int32_t s, ir::ValueId a) const {
  const ir::ValueId row = stored_row_through(s, a, true);
  for (ir::ValueId v = a; row >= 0 && v != row; v = g.at(v).operands[0])
    if (g.at(v).dtype != DType::F32 && g.at(v).dtype != DType::BF16) return -1;
  return row;
}

namespace {

/// The matmuls of a GEMM stage, the outputs (stores, then cache writes), the matmuls each node
/// depends on (through stage and inline nodes), and a union-find over the matmuls that an
/// epilogue node joins.
struct GemmGroups {
  std::vector<ir::ValueId> mms, outs;
  /// Stored activation rows the stage's prologue computes for other stages (a reduction merged
  /// with several readers: pass_gemm_reduce_prologue_shared); no GEMM feeds them.
  std::vector<ir::ValueId> prologue_outs;
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
  for (ir::ValueId v : st.stores) (is_prologue_row(p, v) ? gg.prologue_outs : gg.outs).push_back(v);
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
  std::string total;
  int64_t c = 1;
  int32_t tp = 0;
  /// The body's parts: the output's index, its dot products, the epilogue (lane 0's stores).
  std::string index, dots, epilogue;
  /// Lane 0's L2 prefetches of the output's weight rows (Renderer::gemv_prefetch), or empty.
  std::string prefetch;
  std::string body() const { return index + dots + epilogue; }
};

/// The merged loop's element count over every group, as text, and as the constant factor of T.
std::pair<std::string, int64_t> merged_total(const std::vector<GroupLoop>& loops) {
  std::string all = "0L";
  int64_t c = 0;
  for (const GroupLoop& l : loops) {
    all += " + " + l.total;
    c += l.c;
  }
  return {all, c};
}

/// The branches that run, for the merged index e_all, the group it falls in: `text(group)` after
/// `const long e = e_all - (the group's first index)`.
template <class Text>
std::string group_dispatch(const std::vector<GroupLoop>& loops, Text&& text) {
  std::ostringstream d;
  std::string before = "0L";
  for (size_t i = 0; i < loops.size(); ++i) {
    const std::string end = before + " + " + loops[i].total;
    d << "    " << (i ? "else " : "") << (i + 1 < loops.size() ? "if (e_all < " + end + ") " : "") << "{\n"
      << "      const long e = e_all - (" << before << ");\n" << text(loops[i]) << "    }\n";
    before = end;
  }
  return d.str();
}

// The split loop's warp roles, as a statement: warp lg_wib of the block takes slice lg_slice of K
// for output `first + lg_wib / S` of a round that starts at output `first` (split_output).
std::string split_warp_roles(int S) {
  return "const int lg_wib = threadIdx.x >> 5, lg_slice = lg_wib % " + std::to_string(S) + ";\n";
}
std::string split_output(int S, const std::string& first) { return first + " + lg_wib / " + std::to_string(S); }

// The decode loop of a stage whose outputs each take `gemv_split` warps of a block (S): the
// block's 8 / S outputs per round, every warp a slice of K; the slices' sums meet in shared
// memory and the first slice's warp runs the epilogue. The round count is the block's, so the
// barriers are reached by all its warps.
void split_loop(const std::vector<GroupLoop>& loops, int S, size_t nmm, std::vector<int64_t>& wc,
                std::vector<int32_t>& wp, std::ostringstream& os) {
  const auto [all, c] = merged_total(loops);
  wc.push_back(c * S);
  wp.push_back(1);
  auto dispatch = [&](bool epilogue) {
    return group_dispatch(loops, [&](const GroupLoop& l) { return l.index + (epilogue ? l.epilogue : l.dots); });
  };
  const std::string per_block = std::to_string(8 / S), Ss = std::to_string(S), n = std::to_string(nmm);
  os << "    // decode: " << Ss << " warps per output, each a slice of K\n"
     << "    __shared__ float lg_part[8 * " << n << "];\n"
     << "    " << split_warp_roles(S)
     << "    for (long e_base = (long)blockIdx.x * " << per_block << "; e_base < " << all << "; e_base += (long)gridDim.x * "
     << per_block << ") {\n"
     << "      const long e_all = " << split_output(S, "e_base") << ";\n"
     << "      if (e_all < " << all << ") {\n" << dispatch(false) << "      }\n"
     << "      if (lane == 0) {";
  for (size_t j = 0; j < nmm; ++j) os << " lg_part[lg_wib * " << n << " + " << j << "] = dot" << j << ";";
  os << " }\n      __syncthreads();\n"
     << "      if (e_all < " << all << " && lg_slice == 0) {\n";
  for (size_t j = 0; j < nmm; ++j)
    os << "        dot" << j << " = 0.0f; for (int s = 0; s < " << Ss << "; ++s) dot" << j << " += lg_part[(lg_wib + s) * " << n
       << " + " << j << "];\n";
  os << dispatch(true) << "      }\n      __syncthreads();\n    }\n";
}

// Before the wait on the previous launch, when a decode GEMV streams a bf16 weight row: lane 0 of
// each warp starts copying the first bytes of the rows of its first output (of its slice of K,
// split loop) into L2 (gemv_prefetch_bytes). The weights are written by no launch, so the stream
// starts while the previous launch ends and this one's prologue (RMSNorm, staging) runs, as the
// hand-written GEMV's first loads do (src/lanes/qwen/kernels/gemv.cuh). The wait follows
// (Renderer::body_waits); without prefetches (returns "") it stays at the kernel's head.
std::string decode_prefetch(const std::vector<GroupLoop>& loops, bool merged, int gemv_split) {
  if (std::all_of(loops.begin(), loops.end(), [](const GroupLoop& l) { return l.prefetch.empty(); })) return "";
  auto text = [](const GroupLoop& l) { return l.prefetch.empty() ? std::string() : l.index + l.prefetch; };
  const auto all = merged_total(loops).first;
  std::ostringstream os;
  os << "    if (T == 1 && lane == 0) {  // weight rows into L2 before the wait (decode_prefetch)\n";
  if (gemv_split > 1) {
    os << "      " << split_warp_roles(gemv_split) << "      const long e_all = "
       << split_output(gemv_split, "(long)blockIdx.x * " + std::to_string(8 / gemv_split)) << ";\n"
       << "      if (e_all < " << all << ") {\n" << group_dispatch(loops, text) << "      }\n";
  } else if (merged) {
    os << "      const long e_all = warp;\n      if (e_all < " << all << ") {\n" << group_dispatch(loops, text) << "      }\n";
  } else {
    for (const GroupLoop& l : loops)
      if (!l.prefetch.empty()) os << "      { const long e = warp; if (e < " << l.total << ") {\n" << text(l) << "      } }\n";
  }
  os << "    }\n" << wait_previous_launch();
  return os.str();
}

}  // namespace

int Renderer::decode_split(const std::set<ir::ValueId>& groups, const std::vector<ir::ValueId>& mms,
                           const std::map<ir::ValueId, std::pair<std::string, bool>>& staged) {
  const char* knob = std::getenv("LG_COMPILED_GEMV_SPLIT");
  if (!decode_only || knob_off("LG_COMPILED_GEMV_SPLIT") || knob_off("LG_COMPILED_GEMV_BATCH")) return 1;
  int64_t outs = 0;  // output elements at T = 1
  for (ir::ValueId gr : groups) {
    const ir::Shape& sh = g.at(gr).shape;
    if (sh.size() != 2 || sh[0].is_const() || sh[0].coeff != 1 || !sh[1].is_const()) return 1;
    outs += sh[1].coeff;
  }
  for (ir::ValueId m : mms)
    if (decode_weight(m, staged) < 0) return 1;
  // Until the step's outputs give 4,096 warps (about 31 per SM of the H200), while each slice
  // keeps a load per lane and the slices divide every row. LG_COMPILED_GEMV_SPLIT=N (a power of
  // two up to 8) caps the split at N and lets a slice be as short as one chunk: the tiny test
  // models' rows (K of 64 to 512) then take every split the real shapes do.
  const int cap = knob && *knob ? std::clamp(std::atoi(knob), 1, 8) : 8;
  const int64_t min_chunks = knob && *knob ? 1 : 32;
  int split = 1;
  while (2 * split <= cap && outs * split < 4096) {
    const int next = 2 * split;
    bool fits = true;
    for (ir::ValueId m : mms) {
      const int64_t c = g.at(g.at(m).operands[0]).shape.back().coeff / 8;
      fits = fits && c % next == 0 && c / next >= min_chunks;
    }
    if (!fits) break;
    split = next;
  }
  return split;
}

namespace {

/// The stage's opening: the output index of each warp (each thread in the epilogue form, which
/// reads its dot products back from the GEMM's outputs), its stride, the lane, and the dot
/// product variables dot0, dot1, ... the matmul lambdas name.
void gemm_stage_head(std::ostringstream& os, bool scratch_dots, size_t nmm) {
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
  for (size_t j = 0; j < nmm; ++j) os << (j ? ", " : "") << "dot" << j << " = 0.0f";
  os << ";\n";
}

/// Activation rows other stages read (GemmGroups::prologue_outs): written by the grid once the
/// prologue has run (each block holds its rows' reductions; at T > 1 a prefill form's pack kernel
/// writes them instead).
std::string prologue_rows(Renderer& r, const std::vector<ir::ValueId>& rows, const LambdaNames& name) {
  std::ostringstream body;
  for (ir::ValueId v : rows) {
    const ir::Shape& sh = r.g.at(v).shape;
    const std::vector<std::string> ix = idx_names(sh.size());
    std::string elems = "1L";
    for (const auto& d : sh) elems += " * " + dim(d);
    body << "    for (long e = (long)blockIdx.x * blockDim.x + threadIdx.x; e < " << elems
         << "; e += (long)gridDim.x * blockDim.x) {  // a row the prologue computed, for other stages\n"
         << "      " << delinear(sh, "e", ix, "t_") << "\n      p" << r.arg(v, true) << "[e] = " << call(name, v, ix)
         << ";\n    }\n";
  }
  return body.str();
}

/// Lane 0's epilogue of a group's output element at `ix`: each of the group's outputs `outs`
/// stored (with its bf16 copy where a later GEMM reads it as A: Renderer::epilogue_copy) or
/// written to its cache.
std::string group_epilogue(Renderer& r, int32_t s, const std::vector<ir::ValueId>& outs, const ir::Shape& shape,
                           const std::vector<std::string>& ix, const LambdaNames& name) {
  std::ostringstream gs;
  gs << "      if (lane == 0) {\n";
  for (ir::ValueId v : outs) {
    if (r.g.at(v).op == ir::Op::StateWrite) {
      gs << r.gemm_cache_write(s, v, shape, ix, name);
      continue;
    }
    if (!(r.g.at(v).shape == shape))
      throw Error("emit: stage " + std::to_string(s) + ": a GEMM epilogue output differs from the GEMM's shape");
    const std::string at = "[" + linear(shape, ix) + "]";
    if (const auto c = r.epilogue_copy.find(v); c != r.epilogue_copy.end())
      gs << "        { const float o = " << call(name, v, ix) << ";\n          p" << r.arg(v, true) << at << " = o;\n          "
         << c->second << at << " = lg_to_bf16(o); }\n";
    else
      gs << "        p" << r.arg(v, true) << at << " = " << call(name, v, ix) << ";\n";
  }
  gs << "      }\n";
  return gs.str();
}

/// One group's part of the stage's loop (GroupLoop) over the outputs of `shape`: its element
/// count, the output's index, the dot products of its matmuls `members` (read back from the
/// GEMM's outputs in the epilogue form, else the decode GEMVs with their prefetches) and
/// group_epilogue's stores of `outs`.
GroupLoop group_loop(Renderer& r, int32_t s, const ir::Shape& shape, const std::vector<ir::ValueId>& members,
                     const std::vector<ir::ValueId>& outs, const std::map<ir::ValueId, std::string>& dots,
                     const std::map<ir::ValueId, std::pair<std::string, bool>>& staged, const LambdaNames& name) {
  GroupLoop gl;
  const std::vector<std::string> ix = idx_names(shape.size());
  gl.total = "1L";
  for (const auto& d : shape) {
    gl.total += " * " + dim(d);
    gl.c *= d.coeff;
    if (!d.is_const()) ++gl.tp;
  }
  gl.index = "      " + delinear(shape, "e", ix, "t_") + "\n";
  std::ostringstream ds;  // the dot products
  if (r.scratch_dots) {
    for (ir::ValueId m : members) {
      const Renderer::ScratchDot& sd = r.scratch_dot_of.at(m);  // [T, N] (has_gemm_prefill_form)
      ds << "      " << dots.at(m) << " = d" << sd.param << "[" << ix[0] << " * " << sd.ld << "L + " << sd.col
         << "L + " << ix[1] << "];\n";
    }
  } else {
    ds << r.gemv_dots(members, ix, dots, staged, name);
    gl.prefetch = r.gemv_prefetch(members, ix, staged);
  }
  gl.dots = ds.str();
  gl.epilogue = group_epilogue(r, s, outs, shape, ix, name);
  return gl;
}

/// The loops over the groups' outputs, with their work (wc, wp): the split decode loop
/// (gemv_split > 1), else one loop for every group when they agree on the power of T, so that a
/// small group (k, v) does not leave most warps idle while it runs on its own (returns true), else
/// a loop per group.
bool group_loops(const std::vector<GroupLoop>& loops, int gemv_split, size_t nmm, std::vector<int64_t>& wc,
                 std::vector<int32_t>& wp, std::ostringstream& body) {
  const bool merged = std::all_of(loops.begin(), loops.end(), [&](const GroupLoop& l) { return l.tp == loops[0].tp; });
  if (gemv_split > 1) {
    split_loop(loops, gemv_split, nmm, wc, wp, body);
  } else if (merged) {
    const auto [all, c] = merged_total(loops);
    wc.push_back(c);
    wp.push_back(loops.empty() ? 0 : loops[0].tp);
    body << "    for (long e_all = warp; e_all < " << all << "; e_all += nwarps) {\n"
         << group_dispatch(loops, [](const GroupLoop& l) { return l.body(); }) << "    }\n";
  } else {
    for (const GroupLoop& l : loops) {
      wc.push_back(l.c);
      wp.push_back(l.tp);
      body << "    for (long e = warp; e < " << l.total << "; e += nwarps) {\n" << l.body() << "    }\n";
    }
  }
  return merged;
}

}  // namespace

void Renderer::gemm_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  GemmGroups gg = gemm_groups(p, s);
  const std::vector<ir::ValueId>& mms = gg.mms;
  std::map<ir::ValueId, std::string> dots;
  for (size_t j = 0; j < mms.size(); ++j) dots[mms[j]] = "dot" + std::to_string(j);
  gemm_stage_head(os, scratch_dots, mms.size());
  decode_only = !scratch_dots && has_gemm_prefill_form(p, s) && !knob_off("LG_COMPILED_GEMV_DECODE_ONLY");
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, dots);
  // What reads memory an earlier launch may write: after the wait on it (decode_prefetch).
  std::ostringstream body;
  std::map<ir::ValueId, std::pair<std::string, bool>> staged;
  std::ostringstream prologue;
  bool reduces = false;
  if (!scratch_dots) {
    reduces = block_reductions(s, nodes, name, prologue);
    staged = stage_activations(s, mms, name, prologue);
  }
  // T > 1 runs the prefill form (packs, cuBLASLt, epilogue). Past the trap of a stage with a
  // prologue reduction the compiler is told T is 1: the reduction's memo, seeded under a T == 1
  // guard, is then known in the staging under another, whose loads no longer wait behind a memo
  // test each (session 20: 8B step 4.85 -> 4.70 ms with the batched staging). Elsewhere it costs
  // o_proj and down 2 registers and an occupancy step (64 -> 66; 12.5 -> 14.7 us, o_proj).
  if (decode_only)
    body << (reduces ? "    if (T != 1) { __trap(); __builtin_unreachable(); }  // T > 1 runs the prefill form\n"
                     : "    if (T != 1) __trap();  // T > 1 runs the prefill form (packs, cuBLASLt, epilogue)\n");
  body << prologue.str();
  if (!scratch_dots) body << prologue_rows(*this, gg.prologue_outs, name);
  std::set<ir::ValueId> groups;
  for (ir::ValueId m : mms) groups.insert(gg.find(m));
  gemv_split = decode_split(groups, mms, staged);
  std::vector<GroupLoop> loops;
  for (ir::ValueId gr : groups) {
    const ir::Shape& shape = g.at(gr).shape;
    std::vector<ir::ValueId> members, outs;
    for (ir::ValueId m : mms)
      if (gg.find(m) == gr) {
        if (!(g.at(m).shape == shape))
          throw Error("emit: stage " + std::to_string(s) + ": GEMMs joined by an epilogue differ in shape");
        members.push_back(m);
      }
    for (ir::ValueId v : gg.outs)
      if (gg.find(*gg.dep.at(v).begin()) == gr) outs.push_back(v);
    loops.push_back(group_loop(*this, s, shape, members, outs, dots, staged, name));
  }
  const bool merged = group_loops(loops, gemv_split, mms.size(), wc, wp, body);
  const std::string prefetch = decode_prefetch(loops, merged, gemv_split);
  body_waits = !prefetch.empty();
  os << prefetch << body.str() << "  }\n";
}

}  // namespace lg::emit::cuda
