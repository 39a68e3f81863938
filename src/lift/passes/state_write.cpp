// pass_state_write_into_producer: the KV-cache write is done by the stage that computes the value
// (V straight from the merged q/k/v GEMM, K from the qk-norm + RoPE stage), so the value never
// goes through a buffer of its own and the write costs no launch.
#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

/// Merges a StateWrite stage into the stage P that computes its value when the value is a node of
/// P seen through Reshape/Permute views only (the emitter maps P's element index through them to
/// the cache index) and the merge keeps the stage order acyclic.
void pass_state_write_into_producer(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& g, int32_t w) -> detail::Merge {
    const Stage& st = p.stages[static_cast<size_t>(w)];
    if (st.kind != StageKind::StateWrite || st.nodes.size() != 1) return std::nullopt;
    ir::ValueId v = p.graph.at(st.nodes[0]).operands[1];
    while (p.is_inline[static_cast<size_t>(v)] &&
           (p.graph.at(v).op == ir::Op::Reshape || p.graph.at(v).op == ir::Op::Permute))
      v = p.graph.at(v).operands[0];
    const int32_t prod = p.stage_of[static_cast<size_t>(v)];
    if (prod < 0 || prod == w) return std::nullopt;
    const StageKind k = p.stages[static_cast<size_t>(prod)].kind;
    if (k != StageKind::Attention && k != StageKind::StateWrite && g.merge_is_safe(prod, w)) return {{prod, w}};
    return std::nullopt;
  });
}

}  // namespace lg::lift
