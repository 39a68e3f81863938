// Binding a forward graph's params to a checkpoint: every `param` of the .lg program names a
// checkpoint tensor, which must exist with the declared shape. The CPU executor gets each tensor
// widened to fp32 once; params naming the same tensor (tied embeddings) share one buffer.
#pragma once

#include <vector>

#include "ir/cpu_tensor.h"
#include "ir/ir.h"
#include "model/checkpoint.h"

namespace lg::runtime {

/// Checks every param of `graph` against `checkpoint` and throws one lg::Error listing all
/// missing tensors (with the nearest names present) and all shape mismatches, naming the param,
/// its tensor, and the checkpoint. The params' dtypes in the .lg are storage hints for the GPU
/// lanes: any float dtype in the checkpoint is accepted, widened exactly to fp32.
void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

/// check_params, then the fp32 tensors indexed like graph.params (shared between params that
/// name the same checkpoint tensor).
std::vector<ir::cpu::Tensor> bind_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

}  // namespace lg::runtime
