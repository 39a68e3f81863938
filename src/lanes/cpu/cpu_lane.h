// The "cpu" lane: the CPU reference executor of the model's .lg program behind the Lane
// interface, so `lg run`, the scheduler and the lock checks drive it like a GPU lane. It runs
// the batched graph (ir/batch.h): a step's sequences share one fp32 KV pool, paged as the
// runtime's block tables say. Its provenance is Reference: there is no CUDA program, only the
// program's meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/cpu_executor.h"
#include "ir/cpu_ops.h"
#include "runtime/lane.h"

namespace lg::model {
struct ModelDir;
}

namespace lg {

class CpuLane : public Lane {
 public:
  /// `unbatched`: the forward of one sequence (inputs tokens: i32[T] and pos: i32[T] by name, one
  /// output, logits f32[T, V]), params bound as CpuExecutor wants them; the lane makes the
  /// batched graph for `limits`. Throws lg::Error if the graph's signature differs or it cannot be
  /// batched.
  CpuLane(ir::Graph unbatched, std::vector<ir::cpu::Tensor> params, const LaneLimits& limits);

  std::string name() const override { return "cpu"; }
  Provenance provenance() const override { return Reference{}; }
  const LaneLimits& limits() const override { return limits_; }
  /// Sampled draws on the host's draw_token, so the scheduler's lane-draw path runs without a GPU.
  bool draws() const override { return true; }
  /// Throws lg::Error for a malformed batch and when a returned row of logits is not finite
  /// (runtime::check_finite_logits).
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override;

  /// The logits of every position of one sequence run alone from position 0, f32[T, V], by the
  /// unbatched forward with a KV cache of its own (for tests against per-position references).
  ir::cpu::Tensor forward(std::span<const int32_t> tokens);

  /// The batched graph the lane runs.
  const ir::Graph& graph() const { return executor_.graph(); }

 private:
  ir::Graph unbatched_;
  std::vector<ir::cpu::Tensor> params_;
  LaneLimits limits_;
  ir::CpuExecutor executor_;
};

/// The cpu lane for a model directory: lowers its .lg program with the context `options.max_seq`
/// (0: max_position_embeddings) and binds the checkpoint (see runtime::forward_graph). The
/// default KV pool holds 2 * max_seq positions, less where that passes 1 GiB (never less than
/// max_seq).
std::unique_ptr<Lane> make_cpu_lane(const model::ModelDir& dir, const LaneOptions& options = {});
/// Same, returning the concrete type (tests use forward()).
std::unique_ptr<CpuLane> make_cpu_lane_concrete(const model::ModelDir& dir, const LaneOptions& options = {});

}  // namespace lg
