// A lane is one way to execute a model: the CPU reference executor of the .lg program ("cpu"),
// the CUDA program compiled from it ("compiled"), or a hand-written CUDA lane ("handwritten").
// The scheduler, `lg run`, `lg batch`, `lg bench` and `lg lock check` drive every lane through
// this interface, so they cannot tell lanes apart except by what they compute and how fast.
//
// A step is a ragged batch of sequences (runtime/step.h). The lane owns the KV pool's memory
// (limits().num_blocks blocks of limits().block_size positions); the runtime owns which blocks
// hold which sequence (runtime/kv_blocks.h) and hands each step the block tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/provenance.h"
#include "runtime/step.h"

namespace lg {

/// What a lane says of itself, for reports (`lg bench`). Each figure comes from the lane's own plan
/// or launch sequence, never written in by hand; empty when the lane cannot tell (yet).
struct LaneFacts {
  /// Kernel launches per decoder layer in one decode step. The compiled lane counts them in its
  /// launch plan (as `lg compile --explain`); the hand-written lane in the decode graph it captured
  /// (known after its first decode step).
  std::optional<int64_t> launches_per_decode_layer;
};

class Lane {
 public:
  virtual ~Lane() = default;
  /// "cpu", "compiled", "handwritten".
  virtual std::string name() const = 0;
  virtual Provenance provenance() const = 0;
  /// See LaneFacts. Default: nothing known.
  virtual LaneFacts facts() const { return {}; }
  /// Whether step() honours SeqStep::draw and its penalties (picks tokens from the logits itself,
  /// as runtime/draw.h and penalty_math.h define the pick). A lane that does not is asked for
  /// logits rows, and the host picks.
  virtual bool draws() const { return false; }
  /// Context, KV pool and step sizes, fixed when the lane was made.
  virtual const LaneLimits& limits() const = 0;
  /// Runs the forward over one step's sequences: writes the K/V of their new tokens into the
  /// blocks their tables name, and returns per sequence (in batch order) the argmax and, when
  /// asked, the logits of its last new token. Each sequence sees exactly its own earlier
  /// positions. Throws lg::Error for a batch flatten() refuses (naming the sequence), and for
  /// what the lane finds wrong while running (non-finite logits on the cpu lane).
  virtual std::vector<SeqResult> step(std::span<const SeqStep> batch) = 0;
};

}  // namespace lg
