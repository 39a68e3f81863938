// Merging stages one at a time while the program stays in the order normalize() would give it,
// without normalising the whole program after each merge.
//
// normalize() orders stages by Kahn's algorithm, taking among the stages ready to run the one
// with the least key (stages depending on no stage first, then by first node). Normalising after
// every merge cost the whole program per merge, O(merges x stages) a pass: at 128 layers most of
// `lg compile`. A merge of stages z < w (their positions in that order) mostly leaves the order
// as it was but for the two: merge() checks where Kahn's algorithm would put the merged stage
// (place()), puts it in z's or w's place and leaves the other empty, so that every other stage
// keeps its index. Where the order changes otherwise, it normalises (renumbering every stage).
//
// Between merges the program is what normalize() would make of it, but for the emptied stages
// still in `stages` (no node's stage_of names them) and `launches`, which finish() rebuilds.
#pragma once

#include <cstdint>
#include <memory>

#include "lift/stage.h"
#include "lift/stage_graph.h"

namespace lg::lift {

class StageMerger {
 public:
  /// `p` must be normalized; it is merged in place.
  explicit StageMerger(StagedProgram& p);

  /// Describes the program as it is (emptied stages are no stage: no reader or dependency names
  /// them); updated by every merge.
  StageGraph& graph() { return *graph_; }

  struct Merged {
    int32_t stage;    ///< index of the merged stage
    bool renumbered;  ///< the program was normalised: every stage index may have changed
  };
  /// Moves every node of stage `from` into stage `into` (whose kind the merged stage keeps).
  Merged merge(int32_t into, int32_t from);

  /// Drops the emptied stages (normalize()). The merger is not used after.
  void finish();

 private:
  /// Where the merged stage of z < w (asked before the merge) goes so that, with the other of
  /// the two left empty, the stages are in the order Kahn's algorithm gives after the merge: z or
  /// w, or -1 where neither place is (then merge() normalises).
  int32_t place(int32_t z, int32_t w);

  StagedProgram& p_;
  NodeIndex index_;  // valid across merges (see NodeIndex)
  std::unique_ptr<StageGraph> graph_;
};

}  // namespace lg::lift
