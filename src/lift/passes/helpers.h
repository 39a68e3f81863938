// Small queries the fusion passes share.
#pragma once

#include <vector>

#include "lift/passes/merge_while.h"
#include "lift/stage.h"
#include "lift/stage_graph.h"

namespace lg::lift::detail {

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
