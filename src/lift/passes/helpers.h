// Small queries the fusion passes share.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "lift/stage.h"
#include "lift/stage_graph.h"

namespace lg::lift::detail {

/// A merge a pass wants: stage `from` into stage `into`.
using Merge = std::optional<std::pair<int32_t, int32_t>>;

/// The fixed point every merging pass runs to: `next(p, g)` names the next merge (it has checked
/// g.merge_is_safe), which is made and the program normalised, until `next` finds none. `g`
/// describes `p` as it is when `next` is called.
template <class Next>
void merge_while(StagedProgram& p, Next next) {
  NodeIndex index(p);  // merges keep it valid
  while (true) {
    StageGraph g(p, &index);
    const Merge m = next(static_cast<const StagedProgram&>(p), g);
    if (!m) return;
    merge_stages(p, m->first, m->second);
    normalize(p, index);
  }
}

/// True if one of a stage's inputs (StageGraph::inputs) is a state (a State source or a
/// StateWrite's version).
bool reads_state(const StagedProgram& p, const std::vector<ir::ValueId>& inputs);
/// True if stage s evaluates a transcendental (an op ops.def flags kCostly: exp, log, sin, cos,
/// tanh, sigmoid, pow, ...), inline nodes included.
bool costly_math(const StagedProgram& p, int32_t s);
/// True if every node of stage s is elementwise.
bool all_elementwise(const StagedProgram& p, int32_t s);
/// Dissolves Map stages into their readers (see pass_inline_elementwise); `into_gemm` allows a
/// Gemm reader. Returns true if anything changed.
bool inline_maps(StagedProgram& p, bool into_gemm);

}  // namespace lg::lift::detail
