// Small queries the fusion passes share.
#pragma once

#include <vector>

#include "lift/stage.h"

namespace lg::lift::detail {

/// Stages reading any stored value of stage s (-1: a graph output).
std::vector<int32_t> readers_of_stage(const StagedProgram& p, int32_t s);
/// True if stage s reads a state (a State source or a StateWrite's version), inline nodes followed.
bool reads_state(const StagedProgram& p, int32_t s);
/// True if stage s evaluates a transcendental (exp, log, sin, cos, tanh, sigmoid, pow), inline
/// nodes included.
bool costly_math(const StagedProgram& p, int32_t s);
/// True if every node of stage s is elementwise.
bool all_elementwise(const StagedProgram& p, int32_t s);
/// Dissolves Map stages into their readers (see pass_inline_elementwise); `into_gemm` allows a
/// Gemm reader. Returns true if anything changed.
bool inline_maps(StagedProgram& p, bool into_gemm);

}  // namespace lg::lift::detail
