// Mixture-of-experts fusions: the routing reductions computed where they are read, and the
// residual add done by the experts stage that produces the sum it adds.
#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

/// A Reduce stage whose only reader is a TopK or Experts stage joins that reader (whose kind it
/// keeps): the router's softmax is computed inside the topk stage (E values a row, memoised per
/// thread), and norm_topk_prob's sum of the k weights inside the experts stage that reads them.
/// One launch each fewer per sparse layer; the reductions are recomputed per reading thread or
/// warp, which for rows of E (128) or k (8) values costs less than a launch.
void pass_route_prologue(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& g, int32_t r) -> detail::Merge {
    if (p.stages[static_cast<size_t>(r)].kind != StageKind::Reduce) return std::nullopt;
    const auto readers = g.readers_of_stage(r);
    if (readers.size() != 1 || readers[0] < 0) return std::nullopt;
    const StageKind k = p.stages[static_cast<size_t>(readers[0])].kind;
    if (k != StageKind::TopK && k != StageKind::Experts) return std::nullopt;
    if (detail::reads_state(p, g.inputs(r))) return std::nullopt;
    if (g.merge_is_safe(readers[0], r)) return {{readers[0], r}};
    return std::nullopt;
  });
}

}  // namespace lg::lift
