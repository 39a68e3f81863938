// Sampled draws on the device, for the GPU lanes (Lane::draws): each sequence's token is drawn
// from its logits row where the row lies, as runtime/draw.h defines the draw and bit for bit as
// its host reference draw_token picks, so only one int a sequence comes back. A sampled request
// otherwise brought its f32[V] row to the host every step (607 KB at Qwen3's 151,936 tokens)
// and drew there (0.75-3.7 ms a row on one core of the build machine, bench/RESULTS.md): at 128
// sequences many times the step.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "runtime/cuda/row_draws_kernel.h"
#include "runtime/step.h"

namespace lg::cuda {

class RowDraws {
 public:
  /// Room for the draws of up to `max_rows` sequences a step (mapped pinned memory: the kernel
  /// reads the parameters and writes the tokens across the bus, so no copies are enqueued).
  /// Throws lg::Error when the allocation fails.
  explicit RowDraws(int64_t max_rows);
  ~RowDraws();
  RowDraws(const RowDraws&) = delete;
  RowDraws& operator=(const RowDraws&) = delete;

  /// Throws lg::Error, naming the sequence, for what launch() cannot draw: more drawing sequences
  /// than max_rows, an edit's id outside [0, V), a sequence asking for both an edited draw
  /// (which edits its row in place) and its logits. A lane calls it before it enqueues the
  /// step's work, so a refused step leaves nothing running that reads this object's memory.
  void check(std::span<const SeqStep> batch, int64_t V) const;
  /// Enqueues on `stream` the draws the sequences of `batch` ask for (SeqStep::draw) over logits
  /// f32[>= batch.size(), V], row b being sequence b's last token; one block a drawn row. The
  /// draws with edits (SeqStep::logit_edits: penalties, biases, held tokens) first edit their rows
  /// in place (one launch, one block a row). Returns whether there were any draws. The rows must be written by work
  /// already enqueued on `stream`; `batch` must have passed check(). Throws lg::Error for more
  /// drawing sequences than max_rows, a V outside 1..2^31 - 1, or a launch failure.
  bool launch(float* logits, int64_t V, std::span<const SeqStep> batch, cudaStream_t stream);
  /// After `stream` is synchronised: out[b].drawn for each sequence that asked for a draw (-1 for
  /// a row holding a NaN or Inf, which the caller reports).
  void collect(std::span<const SeqStep> batch, std::span<SeqResult> out) const;

 private:
  void release() noexcept;

  int64_t max_rows_ = 0;
  DrawParams* params_ = nullptr;  ///< [max_rows], mapped pinned
  int32_t* rows_ = nullptr;       ///< [max_rows] logits row of each draw, mapped pinned
  int32_t* tokens_ = nullptr;     ///< [max_rows] the drawn tokens, mapped pinned
  PenaltyRow* penalty_rows_ = nullptr;  ///< [max_rows] penalised draws' runs of edits, mapped pinned
  LogitEdit* edits_ = nullptr;  ///< [edits_cap_] their edits, mapped pinned, made on first use
  size_t edits_cap_ = 0;
};

}  // namespace lg::cuda
