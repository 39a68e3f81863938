// pass_reduce_epilogue: a reduction and the stages that use its result row by row become one
// stage, so RMSNorm (sum of squares, rsqrt, scale) is one kernel, softmax (max, exp-sum, divide)
// is one, and qk-norm + RoPE + the KV-cache write is one.
#include <algorithm>

#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

namespace {

// A shape's size as a pair (constant part, T coefficient part) through two sample values of T.
std::pair<int64_t, int64_t> size_sig(const ir::Shape& s) { return {numel(s, 1), numel(s, 2)}; }

// The iteration space of a reduce stage: the operand of its first reduction (its rows).
std::pair<int64_t, int64_t> row_space(const StagedProgram& p, const Stage& st) {
  for (ir::ValueId v : st.nodes)
    if (ir::is_reduce(p.graph.at(v).op)) return size_sig(p.graph.at(p.graph.at(v).operands[0]).shape);
  return {-1, -1};
}

// The values stage c produces: its stored nodes, its state writes' values, its reductions'
// operands. All must span the reduce stage's row space for c to run inside it.
bool spans_rows(const StagedProgram& p, int32_t c, std::pair<int64_t, int64_t> rows) {
  const Stage& st = p.stages[static_cast<size_t>(c)];
  for (ir::ValueId v : st.nodes) {
    const ir::Node& n = p.graph.at(v);
    const ir::Shape* s = nullptr;
    if (n.op == ir::Op::StateWrite) s = &p.graph.at(n.operands[1]).shape;
    else if (ir::is_reduce(n.op)) s = &p.graph.at(n.operands[0]).shape;
    else if (std::find(st.stores.begin(), st.stores.end(), v) != st.stores.end()) s = &n.shape;
    if (s && size_sig(*s) != rows) return false;
  }
  return true;
}

}  // namespace

/// Merges into each Reduce stage R the Map, StateWrite and Reduce stages that read R and whose
/// values all span R's rows (same element count as the reduced operand), repeatedly.
void pass_reduce_epilogue(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& g, int32_t r) -> detail::Merge {
    if (p.stages[static_cast<size_t>(r)].kind != StageKind::Reduce) return std::nullopt;
    const auto rows = row_space(p, p.stages[static_cast<size_t>(r)]);
    for (int32_t c : g.readers_of_stage(r)) {
      if (c < 0) continue;
      const StageKind k = p.stages[static_cast<size_t>(c)].kind;
      if (k != StageKind::Map && k != StageKind::StateWrite && k != StageKind::Reduce) continue;
      if (spans_rows(p, c, rows) && g.merge_is_safe(r, c)) return {{r, c}};
    }
    return std::nullopt;
  });
}

}  // namespace lg::lift
