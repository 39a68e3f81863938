// The fixed point every merging pass runs to. A pass is a rule asked of one stage at a time:
// `decide(p, g, s)` names the merge stage s wants, (into, from), having checked g.merge_is_safe,
// or none. The rule reads only the program and `g`, which describe the stages as they are when it
// is asked.
//
// The definition (`reference`): ask the stages in execution order; the first that wants a merge
// gets it, the program is normalised, and the stages are asked again from the first, until none
// wants one. That costs the whole program per merge. The default makes the same merges in the
// same order: StageMerger keeps the program in normalize()'s order after a merge (or normalises
// it where it cannot), and a stage that wanted no merge is not asked again until a merge may
// have changed its answer. Every rule's answer for s depends only on s, on the stages next to s
// (its readers and producers: kinds, nodes, stores) and on whether merging s with one of them is
// safe; a merge of x and y changes what other stages are next to, and makes merging a with b safe
// where it was not only when it merges into a or b (a path between a and b through a third stage
// still runs through a third stage after the merge, unless it is merged into a or b). So the
// stages to ask again are the merged stage and its neighbours, and those `also_ask` names for a
// rule that reads further (gemm siblings: the other readers of the same A). The stage asked next
// is always the first that may want a merge: the one the definition would find.
#pragma once

#include <functional>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "lift/stage.h"
#include "lift/stage_graph.h"
#include "lift/stage_merger.h"

namespace lg::lift::detail {

/// A merge a rule wants: stage `from` into stage `into` (whose kind the merged stage keeps).
using Merge = std::optional<std::pair<int32_t, int32_t>>;

/// Stages to ask again, the least index first, each once.
class StagesToAsk {
 public:
  explicit StagesToAsk(size_t n) { all(n); }
  /// Every stage 0..n-1.
  void all(size_t n) {
    queued_.assign(n, true);
    std::vector<int32_t> every(n);
    for (size_t s = 0; s < n; ++s) every[s] = static_cast<int32_t>(s);
    heap_ = Heap(std::greater<>(), std::move(every));
  }
  void push(int32_t s) {
    if (s < 0 || queued_[static_cast<size_t>(s)]) return;
    queued_[static_cast<size_t>(s)] = true;
    heap_.push(s);
  }
  /// The least stage queued, or -1.
  int32_t pop() {
    if (heap_.empty()) return -1;
    const int32_t s = heap_.top();
    heap_.pop();
    queued_[static_cast<size_t>(s)] = false;
    return s;
  }

 private:
  using Heap = std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>>;
  Heap heap_;
  std::vector<bool> queued_;
};

/// A rule that reads no stage beyond the neighbours of the one asked.
struct NoFurtherStages {
  void operator()(const StagedProgram&, StageGraph&, int32_t, StagesToAsk&) const {}
};

/// Runs `decide` to its fixed point on `p` (see the file comment). `also_ask(p, g, m, ask)` pushes
/// the stages beyond m's neighbours whose answer a merge into m may change.
template <class Decide, class AlsoAsk = NoFurtherStages>
void merge_while(StagedProgram& p, bool reference, Decide decide, AlsoAsk also_ask = {}) {
  const StagedProgram& cp = p;
  if (reference) {
    NodeIndex index(p);  // merges keep it valid
    while (true) {
      StageGraph g(p, &index);
      Merge m;
      for (int32_t s = 0; s < static_cast<int32_t>(p.stages.size()) && !m; ++s) m = decide(cp, g, s);
      if (!m) return;
      merge_stages(p, m->first, m->second);
      normalize(p, index);
    }
  }
  StageMerger merger(p);
  StagesToAsk ask(p.stages.size());
  for (int32_t s = ask.pop(); s >= 0; s = ask.pop()) {
    if (p.stages[static_cast<size_t>(s)].nodes.empty()) continue;  // merged into another
    const Merge m = decide(cp, merger.graph(), s);
    if (!m) continue;
    const StageMerger::Merged merged = merger.merge(m->first, m->second);
    if (merged.renumbered) {
      ask.all(p.stages.size());
      continue;
    }
    StageGraph& g = merger.graph();
    ask.push(merged.stage);
    for (int32_t t : g.deps(merged.stage)) ask.push(t);
    for (int32_t t : g.dependents(merged.stage)) ask.push(t);
    also_ask(cp, g, merged.stage, ask);
  }
  merger.finish();
}

}  // namespace lg::lift::detail
