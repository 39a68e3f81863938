// Small queries the fusion passes share.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "lift/stage.h"

namespace lg::lift::detail {

/// A merge a pass wants: stage `from` into stage `into`.
using Merge = std::optional<std::pair<int32_t, int32_t>>;

/// The fixed point every merging pass runs to: `next(p)` names the next merge (it has checked
/// merge_is_safe), which is made and the program normalised, until `next` finds none.
template <class Next>
void merge_while(StagedProgram& p, Next next) {
  while (const Merge m = next(static_cast<const StagedProgram&>(p))) {
    merge_stages(p, m->first, m->second);
    normalize(p);
  }
}

/// Stages reading any stored value of stage s (-1: a graph output).
std::vector<int32_t> readers_of_stage(const StagedProgram& p, int32_t s);
/// True if stage s reads a state (a State source or a StateWrite's version), inline nodes followed.
bool reads_state(const StagedProgram& p, int32_t s);
/// True if stage s evaluates a transcendental (an op ops.def flags kCostly: exp, log, sin, cos,
/// tanh, sigmoid, pow, ...), inline nodes included.
bool costly_math(const StagedProgram& p, int32_t s);
/// True if every node of stage s is elementwise.
bool all_elementwise(const StagedProgram& p, int32_t s);
/// Dissolves Map stages into their readers (see pass_inline_elementwise); `into_gemm` allows a
/// Gemm reader. Returns true if anything changed.
bool inline_maps(StagedProgram& p, bool into_gemm);

}  // namespace lg::lift::detail
