// Scalar CUDA expressions: the elementwise ops from the op table (src/ir/ops.def's cuda column)
// and float literals. Every value in an emitted kernel is a float (integers and bools are exact
// floats), so these are float expressions.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace lg::emit::cuda {

/// The CUDA expression of elementwise node `n` on the operand expressions `operands` (one per
/// operand of n, already broadcast): ops.def's template with $k replaced by operands[k] (the
/// integer template when `ints`, both operands of a binary op being i32/bool). A Cast converts
/// as the host does: to i32 truncates, to bool is != 0, to a float dtype is the value.
/// Throws lg::Error if n is not elementwise.
std::string elementwise_expr(const ir::Node& n, bool ints, const std::vector<std::string>& operands);

/// `v` as a CUDA float literal that reads back as the same float ("1.0f", "-2.5e-06f"); infinities
/// and NaN as bit patterns (__int_as_float), which need no header.
std::string lit(double v);

}  // namespace lg::emit::cuda
