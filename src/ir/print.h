// The readable form of the IR: what `lg ir` prints and what every verifier/executor error quotes,
// one line per node, e.g.
//   %12 = mul f32[T,4,128] %10, %11   # l0.q  qwen3.lg:27
#pragma once

#include <string>

#include "ir/ir.h"

namespace lg::ir {

/// "f32[T,4,128]"; a dim coeff*symbol prints as "4*T".
std::string type_string(const Graph& g, DType dtype, const Shape& shape);
/// "qwen3.lg:27:5" (file basename, line, column), or "<unknown>" for a node without a span.
std::string span_string(const Graph& g, const Span& span);
/// "models/qwen3.lg:27:5" (the file as the program was loaded from it, line, column), for errors
/// a user acts on; "<unknown>:0:0" for a span without a file (a node or param made by a rewrite).
std::string span_text(const Graph& g, const Span& span);
/// One node as the printer writes it, without the trailing comment: "%12 = mul f32[T,4,128] %10, %11".
std::string node_string(const Graph& g, ValueId id);
/// The whole graph: header (model, symbols, inputs, params, states), the nodes, outputs and
/// final states. Stable text, meant for people and for diffs in tests.
std::string print(const Graph& g);

}  // namespace lg::ir
