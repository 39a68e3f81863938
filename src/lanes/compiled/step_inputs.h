// The compiled lane's step inputs (ir/batch.h: tokens, pos, seq i32[T]; block_table i32[B, MB];
// rows i32[B]) as its device buffers hold them, mirrored on the host, so that a step copies only
// what differs: a decode token's id and position, a block table's new entry, not the whole
// [B, MB] table. Pure host code (the lane issues the copies it plans), so CI tests it.
//
// A decode step of B sequences runs a CUDA graph captured for its bucket of Bb >= B rows
// (compiled_lane.cpp): rows B .. Bb-1 are padding, token 0 at position 0 of a sequence of its own
// whose block table names only `pad_block`, a block past the pool the scheduler hands out, so a
// pad row writes and reads nothing a real sequence owns. Their results are dropped.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/step.h"

namespace lg::compiled {

/// The step inputs, in the order the lane finds their buffers.
enum StepInput : int { kTokens = 0, kPos, kSeq, kBlockTable, kRows, kStepInputCount };

/// One host -> device copy: `height` rows of `width` int32s, read from the staging area at
/// element `src` (rows `width` apart) and written to input `input`'s device buffer at element
/// `dst` (rows `pitch` apart; a 1-D copy has height 1).
struct InputCopy {
  StepInput input = kTokens;
  int64_t src = 0, dst = 0, pitch = 0, width = 0, height = 1;
};

class StepInputMirror {
 public:
  /// Inputs sized for `max_t` tokens and `max_b` sequences of `blocks_per_seq` blocks, all
  /// holding 0 (the lane clears the device buffers so). Throws lg::Error for a size below 1.
  StepInputMirror(int64_t max_t, int64_t max_b, int64_t blocks_per_seq);

  /// The copies that make the device hold `f` as flatten() made it (each input's first
  /// T, T, T, B * MB, B elements), each the span from the first to the last element that
  /// differs; their values are written to `staging` from element 0 on. Throws lg::Error when
  /// `staging` is too small (an internal error: the lane sizes it by staging_elems()).
  std::vector<InputCopy> plan(const FlatBatch& f, std::span<int32_t> staging);

  /// The same for an all-decode step (f.T == f.B: one token per sequence) padded to `bucket`
  /// rows (f.B <= bucket <= max_b): tokens and positions with zeros, seq and rows the identity,
  /// the block table's rows 0 .. bucket-1 each up to the block of its position (a pad row: one
  /// entry, `pad_block`). The block table goes in one 2-D copy of the rows and columns that
  /// changed. Throws lg::Error for a step that is not all decode, or a bucket out of range.
  std::vector<InputCopy> plan_decode(const FlatBatch& f, int64_t bucket, int32_t pad_block,
                                     int64_t block_size, std::span<int32_t> staging);

  /// Staging elements any plan needs at most.
  int64_t staging_elems() const { return 3 * max_t_ + max_b_ * mb_ + 2 * max_b_; }
  /// What the device holds (after the copies of every plan so far), for tests.
  const std::vector<int32_t>& held(StepInput k) const { return held_[static_cast<size_t>(k)]; }

 private:
  /// Copies of v into held_[k] from element 0: the span of elements that differ, if any.
  void diff_1d(StepInput k, std::span<const int32_t> v, std::span<int32_t> staging, int64_t& used,
               std::vector<InputCopy>& out);
  int64_t max_t_, max_b_, mb_;
  std::array<std::vector<int32_t>, kStepInputCount> held_;
};

}  // namespace lg::compiled
