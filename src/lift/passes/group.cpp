// pass_group_launches: horizontal fusion. Consecutive element-style stages (map, reduce, gather,
// state write) that do not depend on each other run in one launch whose blocks are split between
// them: q-norm and k-norm + RoPE + cache write of one layer share a launch.
#include <algorithm>

#include "lift/passes.h"
#include "lift/stage_graph.h"

namespace lg::lift {

namespace {
bool element_style(StageKind k) {
  return k == StageKind::Map || k == StageKind::Reduce || k == StageKind::Gather || k == StageKind::StateWrite ||
         k == StageKind::TopK;
}
}  // namespace

/// Rebuilds p.launches: walks the stages in order and adds a stage to the current launch when
/// both are element-style and the stage depends on no stage already in the launch.
void pass_group_launches(StagedProgram& p, const FuseOptions&) {
  StageGraph g(p);
  p.launches.clear();
  for (int32_t s = 0; s < static_cast<int32_t>(p.stages.size()); ++s) {
    bool joined = false;
    if (!p.launches.empty() && element_style(p.stages[static_cast<size_t>(s)].kind)) {
      auto& cur = p.launches.back().stages;
      bool ok = std::all_of(cur.begin(), cur.end(),
                            [&](int32_t c) { return element_style(p.stages[static_cast<size_t>(c)].kind); });
      // One launch, one row count: its kernel takes T or B as its rows (stage_rows_symbol).
      if (ok) {
        const int32_t rows = stage_rows_symbol(p, s);
        ok = std::all_of(cur.begin(), cur.end(), [&](int32_t c) { return stage_rows_symbol(p, c) == rows; });
      }
      if (ok) {
        const auto& deps = g.deps(s);
        ok = std::none_of(cur.begin(), cur.end(),
                          [&](int32_t c) { return std::find(deps.begin(), deps.end(), c) != deps.end(); });
      }
      if (ok) {
        cur.push_back(s);
        joined = true;
      }
    }
    if (!joined) p.launches.push_back({{s}});
  }
}

}  // namespace lg::lift
