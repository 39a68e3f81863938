// The CPU executor of a staged program: runs the stages in their launch order, each stage
// evaluating its fused body element by element the way its kernel does (inline nodes and views
// recomputed through index arithmetic, only stored values going through buffers, state writes
// done in place). CI compares its logits with the IR's CPU reference executor: equal results
// prove that lifting and every fusion pass preserved the meaning of the program.
#pragma once

#include <cstdint>
#include <vector>

#include "lift/stage.h"

namespace lg::lift {

/// Executes a StagedProgram on the host in fp32 storage (evaluation inside a stage in double;
/// reductions and dot products accumulate in double, like the reference). Holds the states
/// (KV cache) between steps.
class StagedExecutor {
 public:
  /// `params[i]` holds Graph::params[i] row-major as fp32 (bf16 weights converted exactly).
  /// Throws lg::Error if a param's size does not match its shape.
  StagedExecutor(const StagedProgram& program, std::vector<std::vector<float>> params);

  /// Runs one step over T tokens. `inputs[i]` holds Graph::inputs[i] (i32, T elements for
  /// tokens and pos). Returns the graph outputs row-major (f32). Throws lg::Error for a position
  /// outside a state, a gather index outside its table, or inputs of the wrong size.
  std::vector<std::vector<float>> step(const std::vector<std::vector<int32_t>>& inputs, int64_t T);
  /// The same with a value for every runtime symbol of the graph (T, then B in a batched graph,
  /// ir/batch.h); paged state writes and attention read the seq and block_table inputs.
  std::vector<std::vector<float>> step(const std::vector<std::vector<int32_t>>& inputs,
                                       const std::vector<int64_t>& symbols);

  /// Zeroes the states.
  void reset();
  /// State `i` (row-major fp32).
  const std::vector<float>& state(size_t i) const { return states_.at(i); }
  /// Replaces state `i` (row-major fp32, its full size): e.g. a GPU lane's cache, so that one of
  /// its steps can be replayed here from the same context. Throws lg::Error on a size mismatch.
  void set_state(size_t i, std::vector<float> values);
  /// What the last step stored for node `v` (a stage's stored value, row-major fp32); empty for a
  /// node no stage of that step stored.
  const std::vector<float>& stored(ir::ValueId v) const { return stored_.at(static_cast<size_t>(v)); }

 private:
  const StagedProgram& p_;
  std::vector<std::vector<float>> params_;
  std::vector<std::vector<float>> states_;
  std::vector<std::vector<float>> stored_;  ///< the last step's stored values, by node
};

}  // namespace lg::lift
