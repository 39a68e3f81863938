// The reader/producer relations between the stages of a StagedProgram, computed on first use and
// kept. The fusion passes ask them for every candidate merge; recomputing them per question (a
// walk over the whole graph each time) made compile time grow with the square of the program,
// and recursing through chains of inline nodes overflowed the stack on long programs. Every walk
// here uses an explicit stack.
//
// Two levels: NodeIndex holds what depends only on the graph and on which nodes are inline (the
// nodes a value is read by and computed from, seen through inline nodes); it stays valid while
// stages merge, so a merging pass builds it once. StageGraph maps that to stage indices for one
// state of the stages (readers, inputs, dependencies) and is rebuilt after every normalize().
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lift/stage.h"

namespace lg::lift {

/// Node-level relations through inline nodes. Valid while p.graph does not change and no inline
/// node becomes a stage node: merging stages keeps it valid, and so does dissolving stages into
/// inline nodes (pass_inline_elementwise), which reading_stages follows through; the inputs it
/// remembers assume that is_inline does not change (merging passes only).
class NodeIndex {
 public:
  explicit NodeIndex(const StagedProgram& p);

  /// Appends to `out` the stages that read v's value directly or through inline nodes (unsorted,
  /// with repeats), and -1 if a graph output does. A node that was a stage node when its readers
  /// were first asked and has since been dissolved into inline nodes is followed to its readers.
  void reading_stages(ir::ValueId v, std::vector<int32_t>& out);

  /// The nodes that read v (graph users), in increasing order.
  const ir::ValueId* users_begin(ir::ValueId v) const { return users_.data() + user_start_[static_cast<size_t>(v)]; }
  const ir::ValueId* users_end(ir::ValueId v) const { return users_.data() + user_start_[static_cast<size_t>(v) + 1]; }

  /// A fresh mark for a walk over nodes: mark(v) == walk means v was reached in it.
  uint32_t new_walk() { return ++walk_; }
  uint32_t& mark(ir::ValueId v) { return mark_[static_cast<size_t>(v)]; }

  /// Inputs of a stage remembered by its node set, which a stage's first node and node count
  /// name while stages only merge (a node is in one stage; a stage's set only grows): StageGraph
  /// asks for them after every merge, and only the merged stage's have changed. The pointers
  /// stay valid until the same first node is remembered again.
  const std::vector<ir::ValueId>* known_inputs(const Stage& s) const;
  const std::vector<ir::ValueId>* remember_inputs(const Stage& s, std::vector<ir::ValueId> inputs);

 private:
  struct Reach {
    std::vector<ir::ValueId> nodes;
    bool output = false;
  };
  const Reach& reach(ir::ValueId v);

  const StagedProgram& p_;
  std::vector<size_t> user_start_;  ///< users of node v: users_[user_start_[v] .. user_start_[v+1])
  std::vector<ir::ValueId> users_;
  std::vector<bool> is_output_;
  std::vector<uint8_t> reach_state_;  ///< 0 unknown, 1 being computed, 2 known
  std::vector<Reach> reach_;
  struct KnownInputs {
    size_t count = 0;  ///< the stage's node count when they were computed
    std::vector<ir::ValueId> inputs;
  };
  std::unordered_map<ir::ValueId, KnownInputs> inputs_by_first_;  ///< by the stage's first node
  std::vector<uint32_t> mark_;
  uint32_t walk_ = 0;
};

/// Stage-level relations for one state of a StagedProgram's stages (stage_of, stages); memoised,
/// so valid only until the stages change, except by merges it is told of (merged()). A pass
/// builds a new one after each normalize().
class StageGraph {
 public:
  /// `index` must describe `p` (see NodeIndex); without one the graph makes its own.
  explicit StageGraph(const StagedProgram& p, NodeIndex* index = nullptr);

  /// The stages that read node v's value directly (through inline nodes, which are traversed),
  /// sorted; -1 stands for "a graph output".
  std::vector<int32_t> readers(ir::ValueId v);
  /// The stages reading any node of stage s, s excluded (-1: a graph output), sorted.
  std::vector<int32_t> readers_of_stage(int32_t s);
  /// The buffer-backed or stage-computed nodes that stage s reads (inline nodes traversed), sorted.
  const std::vector<ir::ValueId>& inputs(int32_t s);
  /// The same by a walk over the nodes s evaluates, using no memo: for a sweep that dissolves
  /// stages upstream of s (inline_maps).
  std::vector<ir::ValueId> inputs_now(int32_t s);
  /// Stages that s must run after (producers of its inputs, readers of a state version that s
  /// overwrites), sorted.
  const std::vector<int32_t>& deps(int32_t s);
  /// Stages that must run after s (those whose deps name s), sorted.
  const std::vector<int32_t>& dependents(int32_t s);
  /// Told that stage w's nodes have moved into stage z (stage_of and nodes updated, w left empty):
  /// z's dependencies become both stages' and every other stage's edge to w goes to z. A stage's
  /// dependencies are those of its nodes, so this is what compute_deps would find afresh, at the
  /// cost of the edges of z and w. The empty stage w is no stage from then on (StageMerger).
  void merged(int32_t z, int32_t w);
  /// True if merging stages a and b would create a dependency cycle through a third stage. Reads
  /// the stage indices as an execution order, as normalize() leaves them.
  bool merge_makes_cycle(int32_t a, int32_t b);
  /// What every fusion pass asks before merging: no cycle, no state race (merge_races_on_state).
  bool merge_is_safe(int32_t a, int32_t b);
  /// The node-level relations it maps to stages (graph users of a node).
  const NodeIndex& index() const { return idx_; }

 private:
  void compute_deps();

  const StagedProgram& p_;
  std::unique_ptr<NodeIndex> own_;
  NodeIndex& idx_;
  std::vector<const std::vector<ir::ValueId>*> inputs_;  ///< into the index's memory; null: not known yet
  bool deps_known_ = false;
  std::vector<std::vector<int32_t>> deps_;
  std::vector<std::vector<int32_t>> succ_;
  std::vector<uint32_t> stage_mark_;  ///< per stage: the last cycle walk that reached it
  uint32_t stage_walk_ = 0;
};

}  // namespace lg::lift
