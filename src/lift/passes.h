// Fusion passes over stages. Each pass is a plain function StagedProgram -> StagedProgram that
// merges stages (or dissolves elementwise stages into their readers); `fusion_passes()` is the one
// ordered list the compiler runs, each pass switched by a field of FuseOptions (no environment
// variables). Every pass leaves the program normalized (stage order valid, stores recomputed).
#pragma once

#include <string>
#include <vector>

#include "lift/stage.h"

namespace lg::lift {

/// Which passes run. All on by default; tests switch one off to see what it contributes.
struct FuseOptions {
  bool inline_elementwise = true;  ///< elementwise stages recomputed inside their one reader
  bool reduce_epilogue = true;     ///< a reduction's row-shaped readers fused into it (RMSNorm = 1)
  bool merge_gemm_siblings = true; ///< GEMMs reading the same A merged (q/k/v, gate/up)
  bool gemm_epilogue = true;       ///< bias, residual, silu(gate)*up, casts after a GEMM
  bool gemm_prologue = true;       ///< elementwise producers of a GEMM operand inlined into it
  bool gather_epilogue = true;     ///< elementwise readers of an embedding lookup fused into it
  bool gemm_reduce_prologue = true;  ///< a row reduction feeding only a GEMM's activation (RMSNorm) fused into it
  bool gemm_reduce_prologue_shared = true;  ///< the same with other readers, which read the rows the GEMM stores
  bool state_write_into_producer = true;  ///< a KV-cache write done by the stage computing the value
  bool group_launches = true;      ///< independent element-style stages launched together
  bool experts_epilogue = true;    ///< the residual add after the routed experts done by their stage
  bool route_prologue = true;      ///< router softmax into the topk stage, the top-k renormalisation into the experts
  /// The merging passes' definition, for tests: after each merge the whole program is normalised
  /// and every stage asked again (O(merges x stages)). Off, they make the same merges in the same
  /// order, keeping the order as they go (passes/merge_while.h).
  bool renormalize_every_merge = false;
};

/// One pass of the pipeline.
struct Pass {
  const char* name;
  bool FuseOptions::*enabled;
  void (*run)(StagedProgram&, const FuseOptions&);
};

/// The passes in the order they run (a pass may appear twice when a later merge exposes more work).
const std::vector<Pass>& fusion_passes();

/// Runs the enabled passes of fusion_passes() in order on `p`.
void fuse(StagedProgram& p, const FuseOptions& opts = {});

// The passes themselves (each documented where it is defined, in passes/<name>.cpp).
void pass_inline_elementwise(StagedProgram& p, const FuseOptions& opts = {});
void pass_reduce_epilogue(StagedProgram& p, const FuseOptions& opts = {});
void pass_merge_gemm_siblings(StagedProgram& p, const FuseOptions& opts = {});
void pass_gemm_epilogue(StagedProgram& p, const FuseOptions& opts = {});
void pass_gemm_prologue(StagedProgram& p, const FuseOptions& opts = {});
void pass_gather_epilogue(StagedProgram& p, const FuseOptions& opts = {});
void pass_gemm_reduce_prologue(StagedProgram& p, const FuseOptions& opts = {});
void pass_gemm_reduce_prologue_shared(StagedProgram& p, const FuseOptions& opts = {});
void pass_state_write_into_producer(StagedProgram& p, const FuseOptions& opts = {});
void pass_group_launches(StagedProgram& p, const FuseOptions& opts = {});
void pass_experts_epilogue(StagedProgram& p, const FuseOptions& opts = {});
void pass_route_prologue(StagedProgram& p, const FuseOptions& opts = {});

}  // namespace lg::lift
