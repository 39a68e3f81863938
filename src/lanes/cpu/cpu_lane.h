// The "cpu" lane: the CPU reference executor of the model's .lg program behind the Lane
// interface, so `lg run`, the generation loop and the lock checks drive it like a GPU lane.
// Its provenance is Reference: there is no CUDA program, only the program's meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/cpu_executor.h"
#include "ir/cpu_ops.h"
#include "lanes/lane.h"

namespace lg::model {
struct ModelDir;
}

namespace lg {

class CpuLane : public Lane {
 public:
  /// `graph` must take the inputs tokens: i32[T] and pos: i32[T] (by name) and return one
  /// output, logits f32[T, V]; params are bound as CpuExecutor wants them. `max_seq` is the KV
  /// cache capacity the graph was lowered with. Throws lg::Error if the graph's signature differs.
  CpuLane(ir::Graph graph, std::vector<ir::cpu::Tensor> params, int64_t max_seq);

  std::string name() const override { return "cpu"; }
  Provenance provenance() const override { return Reference{}; }
  int64_t max_seq() const override { return max_seq_; }
  /// Throws lg::Error when the last position's logits are not finite (runtime::check_finite_logits).
  StepResult step(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) override;
  void reset() override { executor_.reset(); }

  /// Like step, but returns the logits of every position: f32[T, V] (for tests against
  /// per-position references).
  ir::cpu::Tensor forward(std::span<const int32_t> tokens, int64_t start_pos);

  const ir::Graph& graph() const { return executor_.graph(); }

 private:
  std::vector<ir::cpu::Tensor> inputs(std::span<const int32_t> tokens, int64_t start_pos) const;

  ir::CpuExecutor executor_;
  int64_t max_seq_;
  size_t tokens_input_ = 0, pos_input_ = 1;
};

/// The cpu lane for a model directory: lowers its .lg program with KV capacity `max_seq`
/// (0: max_position_embeddings) and binds the checkpoint (see runtime::forward_graph).
std::unique_ptr<Lane> make_cpu_lane(const model::ModelDir& dir, int64_t max_seq);
/// Same, returning the concrete type (tests use forward()).
std::unique_ptr<CpuLane> make_cpu_lane_concrete(const model::ModelDir& dir, int64_t max_seq);

}  // namespace lg
