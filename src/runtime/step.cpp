#include "runtime/step.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "support/count_noun.h"
#include "support/error.h"

namespace lg {

LaneLimits resolve_limits(const LaneOptions& o, int64_t max_seq, int64_t default_pool) {
  auto nonneg = [](int64_t v, const char* what) {
    if (v < 0) throw Error(std::string(what) + " must be >= 0 (0: the default), got " + std::to_string(v));
  };
  nonneg(o.kv_tokens, "the KV cache size in tokens");
  nonneg(o.max_batch, "the number of sequences per step");
  nonneg(o.max_tokens, "the number of tokens per step");
  if (o.block_size < 1 || o.block_size > 4096)
    throw Error("the KV block size must be in 1..4096 positions, got " + std::to_string(o.block_size));
  if (max_seq < 1) throw Error("the context must be >= 1 token, got " + std::to_string(max_seq));
  LaneLimits l;
  l.max_seq = max_seq;
  l.block_size = o.block_size;
  const int64_t pool = o.kv_tokens > 0 ? o.kv_tokens : std::max<int64_t>(default_pool, 1);
  // Named as it came: --kv-tokens only when given (a default pool follows from the context).
  const std::string pool_origin = o.kv_tokens > 0 ? "(--kv-tokens)" : "(the default, with no --kv-tokens)";
  // A sequence alone must be able to reach the end of its context: with less, the scheduler
  // could only preempt it and run it again, forever (vLLM refuses such a cache at start too).
  if (pool < max_seq)
    throw Error("a KV cache of " + count_noun(pool, "token") + " " + pool_origin + " holds less than one context of " +
                count_noun(max_seq, "token") + " (--max-seq): give at least " + std::to_string(max_seq) +
                ", or a smaller --max-seq");
  // Block ids are int32 in the block tables.
  const int64_t blocks = pool / l.block_size + (pool % l.block_size != 0 ? 1 : 0);
  if (blocks > std::numeric_limits<int32_t>::max())
    throw Error("a KV cache of " + std::to_string(pool) + " tokens " + pool_origin + " is more than 2^31 blocks of " +
                std::to_string(l.block_size) + (o.kv_tokens > 0 ? "" : ": give a smaller --max-seq"));
  l.num_blocks = blocks;
  l.max_tokens = o.max_tokens > 0 ? o.max_tokens
                                  // One chunk of a long prompt, but a decode token for every sequence of a full batch.
                                  : std::max(std::min<int64_t>(max_seq, 2048), o.max_batch > 0 ? o.max_batch : 256);
  // A sequence takes at least one token of a step: more sequences than tokens cannot run.
  l.max_batch = std::min(o.max_batch > 0 ? o.max_batch : 256, l.max_tokens);
  return l;
}

FlatBatch flatten(std::span<const SeqStep> batch, const LaneLimits& limits) {
  const auto B = static_cast<int64_t>(batch.size());
  if (B == 0) throw Error("a step needs at least one sequence");
  if (B > limits.max_batch)
    throw Error("a step of " + std::to_string(B) + " sequences exceeds the lane's " + std::to_string(limits.max_batch));
  const int64_t MB = limits.blocks_per_seq(), bs = limits.block_size;
  FlatBatch f;
  f.B = B;
  f.block_table.assign(static_cast<size_t>(B * MB), -1);
  f.rows.resize(static_cast<size_t>(B));
  std::unordered_map<int32_t, int64_t> writer;  // block -> the sequence writing it this step
  for (int64_t b = 0; b < B; ++b) {
    const SeqStep& s = batch[static_cast<size_t>(b)];
    const auto n = static_cast<int64_t>(s.tokens.size());
    const std::string who = "sequence " + std::to_string(b) + " of the step";
    if (n == 0) throw Error(who + " has no tokens");
    const int64_t end = s.start_pos + n;
    if (s.start_pos < 0 || end > limits.max_seq)
      throw Error(who + ": positions " + std::to_string(s.start_pos) + ".." + std::to_string(end - 1) +
                  " do not fit the context of " + std::to_string(limits.max_seq) + " tokens");
    const int64_t need = (end + bs - 1) / bs;
    if (static_cast<int64_t>(s.blocks.size()) < need)
      throw Error(who + ": " + std::to_string(s.blocks.size()) + " blocks cannot hold positions up to " +
                  std::to_string(end - 1) + " (" + std::to_string(need) + " blocks of " + std::to_string(bs) + ")");
    if (static_cast<int64_t>(s.blocks.size()) > MB)
      throw Error(who + ": a block table of " + std::to_string(s.blocks.size()) + " blocks is longer than the " +
                  std::to_string(MB) + " a sequence of the context can use");
    for (size_t j = 0; j < s.blocks.size(); ++j) {
      const int32_t blk = s.blocks[j];
      if (blk < 0 || blk >= limits.num_blocks)
        throw Error(who + ": block " + std::to_string(blk) + " is outside the KV pool of " +
                    std::to_string(limits.num_blocks) + " blocks");
      f.block_table[static_cast<size_t>(b * MB) + j] = blk;
    }
    for (int64_t j = s.start_pos / bs; j < need; ++j) {
      auto [it, fresh] = writer.emplace(s.blocks[static_cast<size_t>(j)], b);
      if (!fresh && it->second != b)
        throw Error(who + " writes block " + std::to_string(it->first) + ", which sequence " + std::to_string(it->second) +
                    " of the step writes too");
    }
    f.T += n;
    if (f.T > limits.max_tokens)
      throw Error("a step of " + std::to_string(f.T) + "+ tokens exceeds the lane's " + std::to_string(limits.max_tokens) +
                  " tokens per step");
    for (int64_t i = 0; i < n; ++i) {
      f.tokens.push_back(s.tokens[static_cast<size_t>(i)]);
      f.pos.push_back(static_cast<int32_t>(s.start_pos + i));
      f.seq.push_back(static_cast<int32_t>(b));
    }
    f.rows[static_cast<size_t>(b)] = static_cast<int32_t>(f.T - 1);
  }
  return f;
}

}  // namespace lg
