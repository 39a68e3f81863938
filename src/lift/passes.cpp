// The fusion pipeline: one ordered list of passes (see passes.h). Order matters: elementwise
// chains dissolve first so that the later passes see reductions and GEMMs with their prologues;
// GEMM siblings merge before epilogues so that silu(gate)*up finds both operands in one stage;
// a reduction feeding only a GEMM's activation (RMSNorm) joins it once the GEMM's siblings are
// merged (one reader left); state writes move into their producers once those are final;
// launches are grouped last.
#include "lift/passes.h"

namespace lg::lift {

const std::vector<Pass>& fusion_passes() {
  static const std::vector<Pass> passes = {
      {"inline_elementwise", &FuseOptions::inline_elementwise, pass_inline_elementwise},
      {"reduce_epilogue", &FuseOptions::reduce_epilogue, pass_reduce_epilogue},
      {"merge_gemm_siblings", &FuseOptions::merge_gemm_siblings, pass_merge_gemm_siblings},
      {"gemm_epilogue", &FuseOptions::gemm_epilogue, pass_gemm_epilogue},
      {"gather_epilogue", &FuseOptions::gather_epilogue, pass_gather_epilogue},
      {"gemm_prologue", &FuseOptions::gemm_prologue, pass_gemm_prologue},
      {"inline_elementwise", &FuseOptions::inline_elementwise, pass_inline_elementwise},
      {"reduce_epilogue", &FuseOptions::reduce_epilogue, pass_reduce_epilogue},
      {"gemm_reduce_prologue", &FuseOptions::gemm_reduce_prologue, pass_gemm_reduce_prologue},
      {"gemm_reduce_prologue_shared", &FuseOptions::gemm_reduce_prologue_shared, pass_gemm_reduce_prologue_shared},
      {"experts_epilogue", &FuseOptions::experts_epilogue, pass_experts_epilogue},
      {"route_prologue", &FuseOptions::route_prologue, pass_route_prologue},
      {"state_write_into_producer", &FuseOptions::state_write_into_producer, pass_state_write_into_producer},
      {"group_launches", &FuseOptions::group_launches, pass_group_launches},
  };
  return passes;
}

void fuse(StagedProgram& p, const FuseOptions& opts) {
  for (const Pass& pass : fusion_passes())
    if (opts.*(pass.enabled)) pass.run(p, opts);
}

}  // namespace lg::lift
