// What one step of a lane carries: a ragged batch of sequences, each with some new tokens (a
// prefill chunk, or one decode token) at its own positions, the KV-cache blocks that hold its
// positions, and what it wants back. Flattened, the tokens of all sequences are one token axis,
// as vLLM and FlashInfer lay out a step (docs/language.md, "Batched steps").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/draw_math.h"
#include "runtime/penalty_math.h"

namespace lg {

/// One sequence's part of a step.
struct SeqStep {
  std::span<const int32_t> tokens;  ///< the new tokens (at least one)
  int64_t start_pos = 0;            ///< position of tokens[0]; positions before it are in the cache
  /// The sequence's block table: blocks[j] holds positions j*block_size .. (j+1)*block_size - 1.
  /// Must cover every position up to start_pos + tokens.size() - 1. Blocks wholly before
  /// start_pos may be shared with other sequences that only read them (the prefix cache).
  std::span<const int32_t> blocks;
  bool want_logits = false;         ///< return the last token's logits (else only its argmax)
  /// Draw the next token from the last token's logits as runtime/draw.h defines it, into
  /// SeqResult::drawn (only asked of a lane whose draws() is true): the logits stay on the lane.
  std::optional<DrawParams> draw;
  /// With `draw`: the edits applied to the row first (runtime/penalty_math.h), one a token the
  /// sequence has seen, biases or holds back (runtime::Sampler::logit_edits), with the penalties'
  /// factors; none when empty. A lane may apply them to its row in place, so a step must not ask
  /// for the same row's logits too.
  PenaltyParams penalty{};
  std::span<const LogitEdit> logit_edits{};
};

/// What a step gives back for one sequence: about its last new token.
struct SeqResult {
  /// Greedy next token (lowest id wins a tie); -1 when the lane found the logits row not finite
  /// (the cpu lane checks every row; the GPU lanes' argmax does not look).
  int32_t argmax = -1;
  std::vector<float> logits;  ///< f32[V] when asked for, else empty
  /// The token SeqStep::draw drew; -1 when none was asked for, or when the logits row was not
  /// finite (a NaN or Inf: no draw is defined over it); any other negative value is a lane's fault.
  int32_t drawn = -1;
};

/// A lane's capacities, fixed when it is made.
struct LaneLimits {
  int64_t max_seq = 0;     ///< positions one sequence may hold (S)
  int64_t block_size = 0;  ///< positions per KV block
  int64_t num_blocks = 0;  ///< blocks in the lane's KV pool
  int64_t max_batch = 0;   ///< sequences per step
  int64_t max_tokens = 0;  ///< tokens per step, all sequences together
  int64_t pool_tokens() const { return num_blocks * block_size; }
  int64_t blocks_per_seq() const { return (max_seq + block_size - 1) / block_size; }
};

/// What a lane is made with (`lg run/serve/batch` options); 0 picks the default.
struct LaneOptions {
  int64_t max_seq = 0;      ///< context per sequence; 0: the model's (max_position_embeddings)
  int64_t kv_tokens = 0;    ///< KV pool size in positions (all sequences); 0: the lane's default
  int64_t max_batch = 0;    ///< sequences per step; 0: 256
  int64_t max_tokens = 0;   ///< tokens per step; 0: max(min(max_seq, 2048), max_batch)
  int64_t block_size = 16;  ///< positions per KV block
};

/// The limits `options` ask for, with max_seq already resolved (`max_seq`: the context the graph
/// was lowered with) and `default_pool` positions when options.kv_tokens is 0. The pool is
/// rounded up to whole blocks; max_batch is at most max_tokens. Throws lg::Error naming the
/// option for a negative value, a block size outside 1..4096, a pool smaller than one context or
/// of more than 2^31 blocks.
LaneLimits resolve_limits(const LaneOptions& options, int64_t max_seq, int64_t default_pool);

/// A step flattened into the inputs of a batched forward graph (ir/batch.h).
struct FlatBatch {
  std::vector<int32_t> tokens, pos, seq;  ///< [T]: token, its position, its sequence (0 .. B-1)
  std::vector<int32_t> block_table;       ///< [B, limits.blocks_per_seq()], unused entries -1
  std::vector<int32_t> rows;              ///< [B]: each sequence's last token in the token axis
  int64_t T = 0, B = 0;
};

/// Checks `batch` against `limits` and flattens it. Throws lg::Error naming the sequence (its
/// index in the batch) for: an empty batch or sequence, more sequences or tokens than the limits
/// allow, positions past max_seq, a block table that does not cover the new positions or names a
/// block outside the pool, and a block written by two sequences of the step (their writes would
/// race).
FlatBatch flatten(std::span<const SeqStep> batch, const LaneLimits& limits);

}  // namespace lg
