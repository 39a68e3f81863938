// Index arithmetic as CUDA text: dims (T stays a runtime variable), row-major linear offsets and
// their inverse, the index variable names of a stage's loops. The view ops that use it are in
// index.cpp (Renderer::view_body).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace lg::emit::cuda {

/// What the kernels being rendered on this thread share: which runtime dim is their `T` (their
/// launch's row count, lift::stage_rows_symbol: the tokens, or the sequences of a batched step)
/// and how states are stored (EmitOptions::bf16_states). Set for a scope by KernelScope.
struct KernelContext {
  int32_t rows = 0;
  bool bf16_states = false;
};
const KernelContext& kernel_context();

/// While alive, kernels on this thread are rendered in `ctx`.
class KernelScope {
 public:
  explicit KernelScope(KernelContext ctx);
  ~KernelScope();
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;

 private:
  KernelContext saved_;
};

/// A dim as a `long` expression: "64L", "T" or "(4L * T)". `T` is the kernel's row count
/// (kernel_context().rows); a dim of another runtime symbol is an internal error.
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
