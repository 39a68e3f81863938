// The reader/producer relations between the stages of a StagedProgram, computed on first use and
// kept. The fusion passes ask them for every candidate merge; recomputing them per question (a
// walk over the whole graph each time) made compile time grow with the square of the program,
// and recursing through chains of inline nodes overflowed the stack on long programs. Every walk
// here uses an explicit stack.
#pragma once

#include <cstdint>
#include <vector>

#include "lift/stage.h"

namespace lg::lift {

/// A view of one state of a StagedProgram (its stage_of, is_inline and stages). Answers are
/// memoised, so the view is valid only while those do not change; a pass builds a new one after
/// each normalize(). pass_inline_elementwise's sweep is the one exception it documents: it keeps
/// the reader sets while it dissolves stages from the last one backwards (see helpers.cpp).
class StageGraph {
 public:
  explicit StageGraph(const StagedProgram& p);

  /// The stages that read node v's value directly (through inline nodes, which are traversed),
  /// sorted; -1 stands for "a graph output".
  const std::vector<int32_t>& readers(ir::ValueId v);
  /// The stages reading any node of stage s, s excluded (-1: a graph output), sorted.
  std::vector<int32_t> readers_of_stage(int32_t s);
  /// The buffer-backed or stage-computed nodes that stage s reads (inline nodes traversed), sorted.
  const std::vector<ir::ValueId>& inputs(int32_t s);
  /// The same, computed afresh (for a sweep that changes the stages upstream of s).
  std::vector<ir::ValueId> inputs_now(int32_t s);
  /// Stages that s must run after (producers of its inputs, readers of a state version that s
  /// overwrites), sorted.
  const std::vector<int32_t>& deps(int32_t s);
  /// True if merging stages a and b would create a dependency cycle through a third stage.
  bool merge_makes_cycle(int32_t a, int32_t b);
  /// What every fusion pass asks before merging: no cycle, no state race (merge_races_on_state).
  bool merge_is_safe(int32_t a, int32_t b);

  /// The nodes that read v (graph users), in increasing order.
  const ir::ValueId* users_begin(ir::ValueId v) const { return users_.data() + user_start_[static_cast<size_t>(v)]; }
  const ir::ValueId* users_end(ir::ValueId v) const { return users_.data() + user_start_[static_cast<size_t>(v) + 1]; }

 private:
  void compute_deps();

  const StagedProgram& p_;
  std::vector<size_t> user_start_;  ///< users of node v: users_[user_start_[v] .. user_start_[v+1])
  std::vector<ir::ValueId> users_;
  std::vector<bool> is_output_;
  std::vector<uint8_t> reader_state_;  ///< 0 unknown, 1 being computed, 2 known
  std::vector<std::vector<int32_t>> readers_;
  std::vector<bool> inputs_known_;
  std::vector<std::vector<ir::ValueId>> inputs_;
  bool deps_known_ = false;
  std::vector<std::vector<int32_t>> deps_;
  std::vector<std::vector<int32_t>> succ_;
  std::vector<uint32_t> mark_;  ///< per node: the walk that last reached it
  uint32_t walk_ = 0;
};

}  // namespace lg::lift
