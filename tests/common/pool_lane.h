// A lane that models a paged KV cache exactly, for tests and fuzzing of the scheduler alone: every
// step writes each token into the pool slot its block table names, and a sequence's next token is
// a hash of the tokens read back through its table at positions 0 .. its last. A wrong block, a
// stale slot, a block shared by two sequences or a preemption that recomputes the wrong tokens
// changes the hash, so "every finished request generates what it generates alone" checks the
// scheduler's block bookkeeping, not just its counting. With `watch` set it also throws when a
// step writes into a block another sequence holds or the prefix cache has named.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/kv_blocks.h"
#include "runtime/draw.h"
#include "runtime/lane.h"
#include "runtime/step.h"
#include "support/error.h"

namespace lg::testing {

/// The hash lane's vocabulary: its argmax is the hash modulo this.
inline constexpr int32_t kPoolLaneVocab = 97;

/// The lane over a pool of `pool_tokens` positions in blocks of `block_size` (LaneOptions's limits).
class PoolLane : public Lane {
 public:
  PoolLane(int64_t max_seq, int64_t pool_tokens, int64_t block_size, int64_t max_batch, int64_t max_tokens) {
    LaneOptions o;
    o.kv_tokens = pool_tokens;
    o.block_size = block_size;
    o.max_batch = max_batch;
    o.max_tokens = max_tokens;
    limits_ = resolve_limits(o, max_seq, pool_tokens);
    pool_.assign(static_cast<size_t>(limits_.pool_tokens()), -1);
  }
  std::string name() const override { return "pool"; }
  Provenance provenance() const override { return Reference{}; }
  const LaneLimits& limits() const override { return limits_; }
  bool draws() const override { return draws_tokens; }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    const FlatBatch f = flatten(batch, limits_);
    const int64_t bs = limits_.block_size, MB = limits_.blocks_per_seq();
    auto slot = [&](int64_t b, int64_t p) {
      return f.block_table[static_cast<size_t>(b * MB + p / bs)] * bs + p % bs;
    };
    for (int64_t t = 0; t < f.T; ++t) {
      if (watch) {  // a block written is its writer's alone: not shared, not cached
        const int32_t b = f.block_table[static_cast<size_t>(f.seq[t] * MB + f.pos[t] / bs)];
        if (watch->holders(b) != 1 || watch->cached(b))
          throw Error("step writes block " + std::to_string(b) + ", held by " + std::to_string(watch->holders(b)) +
                      (watch->cached(b) ? ", cached" : ""));
      }
      pool_[static_cast<size_t>(slot(f.seq[t], f.pos[t]))] = f.tokens[t];
    }
    tokens_fed += f.T;
    std::vector<SeqResult> out;
    for (int64_t b = 0; b < f.B; ++b) {
      uint64_t h = 1469598103934665603ull;
      for (int64_t p = 0; p <= f.pos[static_cast<size_t>(f.rows[b])]; ++p) {
        const int32_t tok = pool_[static_cast<size_t>(slot(b, p))];
        if (tok < 0) throw Error("read an unwritten slot");
        h = (h ^ static_cast<uint64_t>(tok + 1)) * 1099511628211ull;
      }
      SeqResult r;
      r.argmax = static_cast<int32_t>(h % kPoolLaneVocab);
      const SeqStep& s = batch[static_cast<size_t>(b)];
      if (s.want_logits || s.draw) {
        r.logits.assign(kPoolLaneVocab, 0.0f);
        for (int32_t v = 0; v < kPoolLaneVocab; ++v) r.logits[v] = static_cast<float>((h >> (v % 40)) % 7);
        r.logits[r.argmax] = 10.0f;
        if (s.draw) r.drawn = runtime::draw_token(r.logits, *s.draw, s.penalty, s.logit_edits);
        if (!s.want_logits) r.logits.clear();
      }
      out.push_back(std::move(r));
    }
    ++steps;
    return out;
  }
  int64_t steps = 0;
  int64_t tokens_fed = 0;
  const runtime::BlockManager* watch = nullptr;  ///< the scheduler's blocks, checked at each write
  /// Whether the lane draws sampled tokens itself (SeqStep::draw), as the GPU lanes do; else the
  /// scheduler asks for logits rows and draws on the host.
  bool draws_tokens = false;

 private:
  LaneLimits limits_;
  std::vector<int32_t> pool_;
};
}  // namespace lg::testing
