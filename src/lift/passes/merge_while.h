// The fixed point every merging pass runs to. A pass is a rule asked of one stage at a time:
// `decide(p, g, s)` names the merge stage s wants, (into, from), having checked g.merge_is_safe,
// or none. The rule reads only the program and `g`, which describe the stages as they are when it
// is asked.
#pragma once

#include <optional>
#include <utility>

#include "lift/stage.h"
#include "lift/stage_graph.h"

namespace lg::lift::detail {

/// A merge a rule wants: stage `from` into stage `into` (whose kind the merged stage keeps).
using Merge = std::optional<std::pair<int32_t, int32_t>>;

/// Asks the stages in execution order; the first that wants a merge gets it, the program is
/// normalised, and the stages are asked again from the first, until none wants one.
template <class Decide>
void merge_while(StagedProgram& p, Decide decide) {
  NodeIndex index(p);  // merges keep it valid
  while (true) {
    StageGraph g(p, &index);
    Merge m;
    for (int32_t s = 0; s < static_cast<int32_t>(p.stages.size()) && !m; ++s)
      m = decide(static_cast<const StagedProgram&>(p), g, s);
    if (!m) return;
    merge_stages(p, m->first, m->second);
    normalize(p, index);
  }
}

}  // namespace lg::lift::detail
