// Index arithmetic as CUDA text: dims (T stays a runtime variable), row-major linear offsets and
// their inverse, the index variable names of a stage's loops. The view ops that use it are in
// index.cpp (Renderer::view_body).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace lg::emit::cuda {

/// A dim as a `long` expression: "64L", "T" or "(4L * T)".
std::string dim(const ir::Dim& d);

/// The index variable of axis k: "i0", "i1", ...
std::string idx_name(size_t k);

/// idx_name(0) .. idx_name(rank - 1).
std::vector<std::string> idx_names(size_t rank);

/// "((a)*d1 + b)*d2 + c": the row-major linear offset of index expressions `ix` over `shape`.
std::string linear(const ir::Shape& shape, const std::vector<std::string>& ix);

/// Statements declaring `names[k]` = the multi-index of linear offset `lin` over `shape`, through
/// the temporary `tmp`.
std::string delinear(const ir::Shape& shape, const std::string& lin, const std::vector<std::string>& names,
                     const std::string& tmp);

/// The strings joined with `sep`.
std::string join(const std::vector<std::string>& v, const std::string& sep = ", ");

}  // namespace lg::emit::cuda
