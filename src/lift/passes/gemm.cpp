// GEMM fusions: merging GEMMs that read the same activation (q/k/v, gate/up: one pass over the
// activation, one launch), and elementwise epilogues (bias, residual add, silu(gate)*up, casts)
// and gather epilogues computed where the GEMM or gather produces its element.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "lift/passes.h"
#include "lift/passes/helpers.h"
#include "support/error.h"

namespace lg::lift {

namespace {

// The first MatMul node of stage s (its nodes are in graph order).
ir::ValueId first_matmul(const StagedProgram& p, int32_t s) {
  for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes)
    if (p.graph.at(v).op == ir::Op::MatMul) return v;
  throw Error("lift: internal error: a gemm stage without a MatMul");
}

// True if v is a weight: a Param seen through views and casts.
bool is_weight(const StagedProgram& p, ir::ValueId v) {
  while (true) {
    const ir::Node& n = p.graph.at(v);
    if (n.op == ir::Op::Param) return true;
    bool see_through = ir::is_movement(n.op) || n.op == ir::Op::Cast;
    if (!see_through || !p.is_inline[static_cast<size_t>(v)] || n.operands.size() != 1) return false;
    v = n.operands[0];
  }
}

// True if stage c reads values of stage g only elementwise at the same shape: the reading node
// is elementwise with g's value's shape, and no inline view of c reads g. Then c's element (i)
// needs exactly g's element (i), which the GEMM/gather has in registers.
//
// A depth-first walk (explicit stack: inline chains are as long as the program) that visits each
// inline node once, the first time it is reached, with the view flag of that path.
bool reads_pointwise(const StagedProgram& p, int32_t c, int32_t g) {
  std::vector<bool> seen(p.graph.nodes.size(), false);
  struct Frame {
    ir::ValueId v;
    bool via_view;
    size_t next = 0;  // operand to look at next
  };
  std::vector<Frame> stack;
  for (ir::ValueId root : p.stages[static_cast<size_t>(c)].nodes) {
    stack.push_back({root, false});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const ir::Node& n = p.graph.at(f.v);
      if (f.next == n.operands.size()) {
        stack.pop_back();
        continue;
      }
      const ir::ValueId o = n.operands[f.next++];
      if (p.stage_of[static_cast<size_t>(o)] == g) {
        if (f.via_view || !ir::is_elementwise(n.op) || !(p.graph.at(o).shape == n.shape)) return false;
      } else if (p.is_inline[static_cast<size_t>(o)] && !seen[static_cast<size_t>(o)]) {
        seen[static_cast<size_t>(o)] = true;
        stack.push_back({o, f.via_view || !ir::is_elementwise(p.graph.at(o).op)});  // f dangles now
      }
    }
  }
  return true;
}

// Merges Map readers of `kind` stages that read them pointwise.
void epilogues(StagedProgram& prog, StageKind kind) {
  detail::merge_while(prog, [kind](const StagedProgram& p, StageGraph& sg) -> detail::Merge {
    for (int32_t g = 0; g < static_cast<int32_t>(p.stages.size()); ++g) {
      if (p.stages[static_cast<size_t>(g)].kind != kind) continue;
      for (int32_t c : sg.readers_of_stage(g)) {
        if (c < 0 || p.stages[static_cast<size_t>(c)].kind != StageKind::Map) continue;
        if (detail::all_elementwise(p, c) && reads_pointwise(p, c, g) && sg.merge_is_safe(g, c)) return {{g, c}};
      }
    }
    return std::nullopt;
  });
}

}  // namespace

/// Merges Gemm stages whose MatMuls read the same A value (same node), have the same leading
/// (batch, M) dims, and multiply weights (Params, possibly transposed): q/k/v and gate/up.
void pass_merge_gemm_siblings(StagedProgram& prog) {
  detail::merge_while(prog, [](const StagedProgram& p, StageGraph& g) -> detail::Merge {
    // The Gemm stages whose first MatMul multiplies a weight, by the A value it reads, in stage
    // order: only stages of one bucket can merge. (Every pair of stages was compared, once per
    // merge: O(stages^2) a scan, 10-15% of lg compile at 256 layers.) The merge found is the
    // same: the lowest stage a with a partner, its lowest b > a (emitted programs unchanged).
    std::unordered_map<ir::ValueId, std::vector<int32_t>> by_a;
    std::vector<ir::ValueId> mm(p.stages.size(), -1);
    for (int32_t s = 0; s < static_cast<int32_t>(p.stages.size()); ++s) {
      if (p.stages[static_cast<size_t>(s)].kind != StageKind::Gemm) continue;
      const ir::ValueId v = first_matmul(p, s);
      if (!is_weight(p, p.graph.at(v).operands[1])) continue;
      mm[static_cast<size_t>(s)] = v;
      by_a[p.graph.at(v).operands[0]].push_back(s);
    }
    for (int32_t a = 0; a < static_cast<int32_t>(p.stages.size()); ++a) {
      if (mm[static_cast<size_t>(a)] < 0) continue;
      const ir::Node& na = p.graph.at(mm[static_cast<size_t>(a)]);
      const std::vector<int32_t>& bucket = by_a.at(na.operands[0]);
      for (auto it = std::upper_bound(bucket.begin(), bucket.end(), a); it != bucket.end(); ++it) {
        const int32_t b = *it;
        const ir::Node& nb = p.graph.at(mm[static_cast<size_t>(b)]);
        const ir::Shape sa(na.shape.begin(), na.shape.end() - 1), sb(nb.shape.begin(), nb.shape.end() - 1);
        if (sa == sb && g.merge_is_safe(a, b)) return {{a, b}};
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

/// The same for the routed experts' sum (moe_down): the residual add x + moe(...) is done where
/// the experts stage has the sum in registers.
void pass_experts_epilogue(StagedProgram& p) { epilogues(p, StageKind::Experts); }

}  // namespace lg::lift
