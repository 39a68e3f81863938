// Checks of a checkpoint's contents that loading does not do: non-finite weights (a broken
// conversion or a diverged training run; they make every logit NaN) and whether config.json's
// dims agree with the tensor shapes (a config from another size of the same family). `lg inspect`
// reports both; the hot path never scans weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"

namespace lg::model {

/// A floating-point tensor holding NaN or +-Inf values.
struct NonFiniteTensor {
  std::string name;
  uint64_t nan = 0, inf = 0;  ///< element counts
  uint64_t first_index = 0;   ///< flat row-major index of the first non-finite element
};

/// Every bf16/f16/f32 tensor with a NaN or Inf element, in name order (integer tensors are
/// skipped). Reads the exponent bits in place: one pass over the mapped bytes, no conversion.
std::vector<NonFiniteTensor> find_non_finite(const Checkpoint& ckpt);

/// Where config.json's dims disagree with the checkpoint's shapes, as one sentence each naming
/// the tensor, its shape, the shape the config implies and the config fields it comes from.
/// Checks the Hugging Face Qwen2/Qwen3 tensor names (embed_tokens, lm_head when untied, q/k/v/o,
/// gate/up/down, the norms) for layers 0 .. num_hidden_layers-1, and flags layers the
/// checkpoint has beyond num_hidden_layers. Tensors that are absent are not reported here
/// (loading a program reports those, naming the nearest names).
std::vector<std::string> config_shape_mismatches(const ModelConfig& config, const Checkpoint& ckpt);

/// Throws lg::Error "<where>: <first mismatch> (and N more; `lg inspect <where>` lists them)"
/// when config_shape_mismatches finds any. Shapes only (no weight bytes are read), so commands
/// that run a model call it right after opening the directory: a config from another size
/// otherwise surfaces later as a misleading prompt or gather error.
void require_config_matches_shapes(const ModelConfig& config, const Checkpoint& ckpt, const std::string& where);

}  // namespace lg::model
