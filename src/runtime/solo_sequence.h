// One sequence stepped by hand on a lane (locks, benchmarks, tests): it allocates its blocks
// from a BlockManager over the lane's KV pool and feeds tokens at its next positions, in chunks
// of the lane's token budget. The scheduler is for generating; this is for driving a lane step
// by step with tokens the caller chooses (teacher forcing).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/kv_blocks.h"
#include "runtime/lane.h"

namespace lg::runtime {

class SoloSequence {
 public:
  /// A sequence at position 0. `blocks`: the allocator of the lane's pool; null: one of its own
  /// (the sequence is then the lane's only user).
  explicit SoloSequence(Lane& lane, BlockManager* blocks = nullptr);
  ~SoloSequence();
  SoloSequence(const SoloSequence&) = delete;
  SoloSequence& operator=(const SoloSequence&) = delete;

  /// Feeds `tokens` at positions position() .. and returns the result of the last one. Throws
  /// lg::Error for an empty span, positions past the context, or a full KV pool.
  SeqResult feed(std::span<const int32_t> tokens, bool want_logits);
  /// The SeqStep for feeding `tokens` next (its blocks grown); the caller runs it in a batch of
  /// its own making, then calls advance(tokens.size()).
  SeqStep next(std::span<const int32_t> tokens, bool want_logits);
  void advance(int64_t n) { pos_ += n; }
  int64_t position() const { return pos_; }
  /// Frees the blocks; the sequence starts again at position 0.
  void restart();

 private:
  Lane& lane_;
  BlockManager own_;
  BlockManager* blocks_;
  std::vector<int32_t> table_;
  int64_t pos_ = 0;
};

}  // namespace lg::runtime
