// The device draw kernel's launcher (row_draws.cu), apart from RowDraws (row_draws.h) so that
// nvcc, which compiles the kernel as C++17, never reads runtime/step.h's C++20.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/draw_math.h"

namespace lg::cuda {

/// Draws params[k] from row rows[k] of logits f32[., V] into tokens[k] (device-visible
/// pointers), one block of 1,024 threads a draw, exactly as runtime/draw.h's draw_token; a row
/// holding a NaN or Inf gets -1. Enqueued on `stream`; nothing for n <= 0. Throws lg::Error for a
/// V outside 1..2^31 - 1 or a launch failure.
void launch_row_draws(const float* logits, int64_t V, const DrawParams* params, const int32_t* rows, int32_t* tokens,
                      int n, cudaStream_t stream);

}  // namespace lg::cuda
