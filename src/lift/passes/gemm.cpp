// GEMM fusions: merging GEMMs that read the same activation (q/k/v, gate/up: one pass over the
// activation, one launch), and elementwise epilogues (bias, residual add, silu(gate)*up, casts)
// and gather epilogues computed where the GEMM or gather produces its element.
#include <algorithm>
#include <functional>

#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

namespace {

std::vector<ir::ValueId> matmuls(const StagedProgram& p, int32_t s) {
  std::vector<ir::ValueId> out;
  for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes)
    if (p.graph.at(v).op == ir::Op::MatMul) out.push_back(v);
  return out;
}

// True if v is a weight: a Param seen through views and casts.
bool is_weight(const StagedProgram& p, ir::ValueId v) {
  const ir::Node& n = p.graph.at(v);
  if (n.op == ir::Op::Param) return true;
  bool see_through = ir::is_movement(n.op) || n.op == ir::Op::Cast;
  if (see_through && p.is_inline[static_cast<size_t>(v)] && n.operands.size() == 1)
    return is_weight(p, n.operands[0]);
  return false;
}

// True if stage c reads values of stage g only elementwise at the same shape: the reading node
// is elementwise with g's value's shape, and no inline view of c reads g. Then c's element (i)
// needs exactly g's element (i), which the GEMM/gather has in registers.
bool reads_pointwise(const StagedProgram& p, int32_t c, int32_t g) {
  std::vector<bool> seen(p.graph.nodes.size(), false);
  std::function<bool(ir::ValueId, bool)> ok = [&](ir::ValueId v, bool via_view) -> bool {
    const ir::Node& n = p.graph.at(v);
    for (ir::ValueId o : n.operands) {
      if (p.stage_of[static_cast<size_t>(o)] == g) {
        if (via_view || !ir::is_elementwise(n.op) || !(p.graph.at(o).shape == n.shape)) return false;
      } else if (p.is_inline[static_cast<size_t>(o)] && !seen[static_cast<size_t>(o)]) {
        seen[static_cast<size_t>(o)] = true;
        if (!ok(o, via_view || !ir::is_elementwise(p.graph.at(o).op))) return false;
      }
    }
    return true;
  };
  for (ir::ValueId v : p.stages[static_cast<size_t>(c)].nodes)
    if (!ok(v, false)) return false;
  return true;
}

// Merges Map readers of `kind` stages that read them pointwise.
void epilogues(StagedProgram& prog, StageKind kind) {
  detail::merge_while(prog, [kind](const StagedProgram& p) -> detail::Merge {
    for (int32_t g = 0; g < static_cast<int32_t>(p.stages.size()); ++g) {
      if (p.stages[static_cast<size_t>(g)].kind != kind) continue;
      for (int32_t c : detail::readers_of_stage(p, g)) {
        if (c < 0 || p.stages[static_cast<size_t>(c)].kind != StageKind::Map) continue;
        if (detail::all_elementwise(p, c) && reads_pointwise(p, c, g) && merge_is_safe(p, g, c)) return {{g, c}};
      }
    }
    return std::nullopt;
  });
}

}  // namespace

/// Merges Gemm stages whose MatMuls read the same A value (same node), have the same leading
/// (batch, M) dims, and multiply weights (Params, possibly transposed): q/k/v and gate/up.
void pass_merge_gemm_siblings(StagedProgram& prog) {
  detail::merge_while(prog, [](const StagedProgram& p) -> detail::Merge {
    for (int32_t a = 0; a < static_cast<int32_t>(p.stages.size()); ++a) {
      if (p.stages[static_cast<size_t>(a)].kind != StageKind::Gemm) continue;
      const ir::Node& na = p.graph.at(matmuls(p, a).front());
      if (!is_weight(p, na.operands[1])) continue;
      for (int32_t b = a + 1; b < static_cast<int32_t>(p.stages.size()); ++b) {
        if (p.stages[static_cast<size_t>(b)].kind != StageKind::Gemm) continue;
        const ir::Node& nb = p.graph.at(matmuls(p, b).front());
        if (nb.operands[0] != na.operands[0] || !is_weight(p, nb.operands[1])) continue;
        const ir::Shape sa(na.shape.begin(), na.shape.end() - 1), sb(nb.shape.begin(), nb.shape.end() - 1);
        if (sa == sb && merge_is_safe(p, a, b)) return {{a, b}};
      }
    }
    return std::nullopt;
  });
}

/// Merges into each Gemm stage the elementwise Map stages that read its results pointwise:
/// bias add, residual add, silu(gate)*up over a merged gate/up, casts.
void pass_gemm_epilogue(StagedProgram& p) { epilogues(p, StageKind::Gemm); }

/// Merges into each Gather stage the elementwise Map stages that read the gathered rows pointwise
/// (a cast of the embedding, a scale by sqrt(D)).
void pass_gather_epilogue(StagedProgram& p) { epilogues(p, StageKind::Gather); }

}  // namespace lg::lift
