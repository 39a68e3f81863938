// The IR verifier: checks that a graph obeys ir.h, so that the executor, the lifter and the
// emitters can trust it. Run after lowering and after every pass that rewrites a graph.
#pragma once

#include "ir/ir.h"

namespace lg::ir {

/// Checks topological order, operand counts, attributes, and the dtype and (symbolic) shape of
/// every node against its op's rule in ir.h; the outputs and final states; and the input, param
/// and state tables. Broadcasting follows numpy (right-aligned; equal rank is the usual case).
/// Throws lg::Error naming the first bad node as the printer shows it, with its source span.
void verify(const Graph& g);

}  // namespace lg::ir
