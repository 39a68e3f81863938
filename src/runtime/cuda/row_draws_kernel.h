// The device draw kernel's launcher (row_draws.cu), apart from RowDraws (row_draws.h) so that
// nvcc, which compiles the kernel as C++17, never reads runtime/step.h's C++20.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/draw_math.h"
#include "runtime/penalty_math.h"

namespace lg::cuda {

/// Draws params[k] from row rows[k] of logits f32[., V] into tokens[k] (device-visible
/// pointers), one block of 1,024 threads a draw, exactly as runtime/draw.h's draw_token; a row
/// holding a NaN or Inf gets -1. Enqueued on `stream`; nothing for n <= 0. Throws lg::Error for a
/// V outside 1..2^31 - 1 or a launch failure.
void launch_row_draws(const float* logits, int64_t V, const DrawParams* params, const int32_t* rows, int32_t* tokens,
                      int n, cudaStream_t stream);

/// One drawn row's penalties: their factors, the logits row they edit and their run of edits.
struct PenaltyRow {
  PenaltyParams p;
  int32_t row = 0;
  int32_t count = 0;   ///< edits in the run
  int64_t begin = 0;   ///< its first edit's index
};

/// Applies rows[k]'s edits to logits row rows[k].row in place (draw::edited), one block a
/// row, its threads each an edit: a run names each id at most once (PenaltyHistory's edits do),
/// else two threads would race on a logit. An edit whose id is outside [0, V) is skipped
/// (RowDraws::check refuses them first). Enqueued on
/// `stream`; nothing for n <= 0. Throws lg::Error for a launch failure.
void launch_row_penalties(float* logits, int64_t V, const PenaltyRow* rows, const LogitEdit* edits, int n,
                          cudaStream_t stream);

}  // namespace lg::cuda
