// GEMM fusions: merging GEMMs that read the same activation (q/k/v, gate/up: one pass over the
// activation, one launch), and elementwise epilogues (bias, residual add, silu(gate)*up, casts)
// and gather epilogues computed where the GEMM or gather produces its element.
#include <algorithm>
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
void epilogues(StagedProgram& prog, StageKind kind, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [kind](const StagedProgram& p, StageGraph& sg, int32_t g) -> detail::Merge {
    if (p.stages[static_cast<size_t>(g)].kind != kind) return std::nullopt;
    for (int32_t c : sg.readers_of_stage(g)) {
      if (c < 0 || p.stages[static_cast<size_t>(c)].kind != StageKind::Map) continue;
      if (detail::all_elementwise(p, c) && reads_pointwise(p, c, g) && sg.merge_is_safe(g, c)) return {{g, c}};
    }
    return std::nullopt;
  });
}

// Stage s's first MatMul if s is a Gemm stage and that MatMul multiplies a weight, else -1: the
// MatMul whose A operand names the stages s can merge with.
ir::ValueId weight_matmul(const StagedProgram& p, int32_t s) {
  if (p.stages[static_cast<size_t>(s)].kind != StageKind::Gemm) return -1;
  const ir::ValueId v = first_matmul(p, s);
  return is_weight(p, p.graph.at(v).operands[1]) ? v : -1;
}

// The stages after a whose weight_matmul reads `a_value` as its A, in stage order: found among
// the readers of that value, not by comparing every pair of stages (O(stages^2) a scan, 10-15% of
// lg compile at 256 layers).
std::vector<int32_t> later_siblings(const StagedProgram& p, StageGraph& g, int32_t a, ir::ValueId a_value) {
  std::vector<int32_t> out;
  const NodeIndex& index = g.index();
  for (const ir::ValueId* u = index.users_begin(a_value); u != index.users_end(a_value); ++u) {
    const int32_t b = p.stage_of[static_cast<size_t>(*u)];
    if (b <= a || p.graph.at(*u).op != ir::Op::MatMul || p.graph.at(*u).operands[0] != a_value) continue;
    const ir::ValueId vb = weight_matmul(p, b);
    if (vb >= 0 && p.graph.at(vb).operands[0] == a_value) out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

/// Merges Gemm stages whose MatMuls read the same A value (same node), have the same leading
/// (batch, M) dims, and multiply weights (Params, possibly transposed): q/k/v and gate/up.
void pass_merge_gemm_siblings(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& g, int32_t a) -> detail::Merge {
    const ir::ValueId va = weight_matmul(p, a);
    if (va < 0) return std::nullopt;
    const ir::Node& na = p.graph.at(va);
    for (int32_t b : later_siblings(p, g, a, na.operands[0])) {
      const ir::Node& nb = p.graph.at(first_matmul(p, b));
      const ir::Shape sa(na.shape.begin(), na.shape.end() - 1), sb(nb.shape.begin(), nb.shape.end() - 1);
      if (sa == sb && g.merge_is_safe(a, b)) return {{a, b}};
    }
    return std::nullopt;
  }, [](const StagedProgram& p, StageGraph& g, int32_t m, detail::StagesToAsk& ask) {
    // The stages of m's A read no stage next to m: asked again, as m's place among them and
    // whether it may merge with them have changed. (m's first MatMul is one of the two merged
    // stages', which read the same A.)
    const ir::ValueId v = weight_matmul(p, m);
    if (v >= 0)
      for (int32_t b : later_siblings(p, g, -1, p.graph.at(v).operands[0])) ask.push(b);
  });
}

/// Merges into each Gemm stage the elementwise Map stages that read its results pointwise:
/// bias add, residual add, silu(gate)*up over a merged gate/up, casts.
void pass_gemm_epilogue(StagedProgram& p, const FuseOptions& opts) { epilogues(p, StageKind::Gemm, opts); }

/// Merges into each Gather stage the elementwise Map stages that read the gathered rows pointwise
/// (a cast of the embedding, a scale by sqrt(D)).
void pass_gather_epilogue(StagedProgram& p, const FuseOptions& opts) { epilogues(p, StageKind::Gather, opts); }

/// The same for the routed experts' sum (moe_down): the residual add x + moe(...) is done where
/// the experts stage has the sum in registers.
void pass_experts_epilogue(StagedProgram& p, const FuseOptions& opts) { epilogues(p, StageKind::Experts, opts); }

}  // namespace lg::lift
