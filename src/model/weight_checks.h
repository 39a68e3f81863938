// A check of a checkpoint's contents that loading does not do: non-finite weights (a broken
// conversion or a diverged training run; they make every logit NaN). `lg inspect --check`
// reports it; the hot path never scans weights. Whether the tensor shapes fit config.json is
// checked against the .lg program's params (runtime/bind_params.h, param_problems).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"

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

}  // namespace lg::model
