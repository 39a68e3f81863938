// Binding a forward graph's params to a checkpoint: every `param` of the .lg program names a
// checkpoint tensor, which must exist with the declared shape. The CPU executor gets each tensor
// widened to fp32 once; params naming the same tensor (tied embeddings) share one buffer.
#pragma once

#include <vector>

#include "ir/cpu_tensor.h"
#include "ir/ir.h"
#include "model/checkpoint.h"

namespace lg::runtime {

/// Where `checkpoint` does not fit `graph`'s params, one sentence each: a missing tensor (with the
/// nearest names present), a shape other than the param declares, a dtype that cannot be computed
/// with, and tensors of a bound name form ("model.layers.#.mlp.up_proj.weight") that no param
/// binds (a config with fewer layers than the checkpoint), and tensors no param binds beside tensors
/// the program does read (a q_norm or a bias the forward would run without: a config.json whose
/// model_type names another architecture). Empty when it fits. Shapes only: no weight bytes are read.
std::vector<std::string> param_problems(const ir::Graph& graph, const model::Checkpoint& checkpoint);

/// Throws one lg::Error listing all param_problems (naming the params, their tensors and the
/// checkpoint). The params' dtypes in the .lg are storage hints for the GPU lanes: any float dtype
/// in the checkpoint is accepted, widened exactly to fp32.
void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

/// The param's tensor widened to fp32 in the param's layout (transposed when p.transposed), row-major.
std::vector<float> param_f32(const model::Checkpoint& checkpoint, const ir::ParamInfo& p);

/// check_params, then the fp32 tensors indexed like graph.params (shared between params that
/// name the same checkpoint tensor).
std::vector<ir::cpu::Tensor> bind_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

}  // namespace lg::runtime
