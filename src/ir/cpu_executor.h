// The CPU reference executor: runs a verified IR graph step by step in fp32, keeping the state
// (the KV cache) between steps. It is the meaning of the .lg language: every other lane is
// checked against it. Simple before fast: each node becomes one call of a primitive in
// cpu_ops.h; values are freed after their last use; views share buffers; StateWrite updates
// the cache in place when nothing else still reads the old version.
#pragma once

#include <span>
#include <vector>

#include "ir/cpu_tensor.h"
#include "ir/ir.h"

namespace lg::ir {

class CpuExecutor {
 public:
  /// Verifies `graph` and binds its weights: params[i] is Graph::params[i], already widened to
  /// f32 (or i32), with exactly the declared (constant) shape. Tensors may be shared between
  /// params (tied embeddings). States start as zeros. Throws lg::Error naming the param at fault.
  CpuExecutor(Graph graph, std::vector<cpu::Tensor> params);

  const Graph& graph() const { return graph_; }

  /// Runs one step. inputs[i] is Graph::inputs[i]; runtime symbols (T) are bound from the
  /// inputs' shapes and checked against their bounds. Returns the values of Graph::outputs and
  /// leaves Graph::final_states as the new states. Throws lg::Error with the failing node and
  /// its source span; after an error the states are zeroed (the sequence is lost).
  std::vector<cpu::Tensor> run(std::span<const cpu::Tensor> inputs);

  /// Like run, but an output that is a MatMul of a rank-2 operand [T, K] (the LM head) is
  /// computed for its last row only, giving [1, N]: row t of such a product depends only on row
  /// t of the operand, so this equals the last row of run()'s output, without the T-1 rows a
  /// generation step throws away (for a long prompt, most of the prefill's time and memory).
  std::vector<cpu::Tensor> run_last_position(std::span<const cpu::Tensor> inputs);

  /// Zeroes every state (forgets the sequence).
  void reset();

  /// The current value of state `i` (indexed like Graph::states).
  const cpu::Tensor& state(size_t i) const { return states_.at(i); }
  /// The bound value of runtime symbol `sym` in the last run.
  int64_t symbol_value(size_t sym) const { return symbols_.at(sym); }

 private:
  std::vector<int64_t> concrete(const Shape& s) const;
  cpu::Tensor eval(size_t id, std::vector<cpu::Tensor>& values);
  void bind_symbols(std::span<const cpu::Tensor> inputs);
  std::vector<cpu::Tensor> run_impl(std::span<const cpu::Tensor> inputs, bool last_only);
  /// Whether node `id` is computed for its last row only in this run.
  bool last_row_only(size_t id) const;

  Graph graph_;
  std::vector<cpu::Tensor> params_;
  std::vector<cpu::Tensor> states_;
  std::vector<int64_t> symbols_;
  std::vector<size_t> last_use_;  ///< per node: the last node that reads it (or nodes.size())
  std::vector<bool> is_output_;
  bool last_only_ = false;
};

}  // namespace lg::ir
