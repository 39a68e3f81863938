// The KV pool's block allocator. A lane holds the KV cache of every sequence in one pool of
// fixed-size blocks (vLLM's PagedAttention); which blocks a sequence's positions live in is its
// block table, owned by the runtime: this class hands out and takes back block ids, so memory
// follows the tokens a sequence holds rather than the longest it could get.
//
// With prefix caching (prefix_cache.h; used by the scheduler, not by every owner) a block is
// shared, copy-free, by the sequences whose tokens start alike: full blocks are named by their
// content (all the tokens up to their end) once written, a sequence takes the cached blocks its
// tokens start with (a reference each), and a cached block no sequence holds stays in the pool,
// counted free, until a block is needed and no never-cached one is left: then the least recently
// freed is evicted and reused. A block a sequence holds is never evicted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/prefix_cache.h"

namespace lg::runtime {

/// Block ids 0 .. num_blocks-1 of one lane's pool. Not thread-safe: one owner (the generation
/// loop, the scheduler) allocates for all the sequences it runs.
class BlockManager {
 public:
  /// Throws lg::Error unless num_blocks >= 1 and block_size >= 1.
  BlockManager(int64_t num_blocks, int64_t block_size);

  int64_t num_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t block_size() const { return block_size_; }
  /// Blocks no sequence holds: never written or forgotten, and cached ones (evictable).
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()) + cache_.parked_count(); }
  /// Of the free blocks, those that hold a cached prefix (evicted least recently freed first).
  int64_t cached_free_blocks() const { return cache_.parked_count(); }
  /// Blocks held by at least one sequence.
  int64_t used_blocks() const { return num_blocks() - free_blocks(); }
  /// Cached blocks evicted (forgotten to hold other tokens) so far.
  int64_t evictions() const { return cache_.evictions(); }
  /// Sequences holding block `b` (0 when free).
  int32_t holders(int32_t b) const { return refs_.at(static_cast<size_t>(b)); }
  /// Whether block `b` is in the prefix cache's index (another sequence may take it).
  bool cached(int32_t b) const { return cache_.indexed(b); }
  /// Blocks that hold `positions` positions (ceil).
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  /// Extends `table` with free blocks until it holds `positions` positions: never-cached ones
  /// first, then cached ones no sequence holds, least recently freed first (evicted: their
  /// cached content is forgotten). Returns false, and takes nothing, when too few blocks are free.
  bool grow(std::vector<int32_t>& table, int64_t positions);
  /// Lets go of every block of `table` and empties it. A block whose last holder lets it go is
  /// free again: kept in the prefix cache if it is named there, the table's later blocks counted
  /// less recent (evicted first), else forgotten. Throws lg::Error for a block not held.
  void release(std::vector<int32_t>& table);

  /// Prefix caching: appends to the empty `table` the cached blocks that hold `tokens`' first
  /// full blocks, as many as match in a row and at most `max_blocks`, taking a reference on
  /// each. Returns how many (0 when the first block is not cached). Throws lg::Error for a table
  /// that is not empty.
  int64_t take_cached_prefix(std::vector<int32_t>& table, std::span<const int32_t> tokens, int64_t max_blocks);
  /// Prefix caching: names blocks table[from .. to-1], whose positions now hold `tokens` (their
  /// K/V written), so that later sequences find them; blocks table[0 .. from-1] must be named
  /// already (by an earlier call, or taken from the cache). Returns `to`. Throws lg::Error for
  /// a block past `tokens` or named already.
  int64_t cache_full_blocks(std::span<const int32_t> table, std::span<const int32_t> tokens, int64_t from, int64_t to);

 private:
  int64_t block_size_;
  std::vector<int32_t> refs_;   ///< holders per block
  std::vector<int32_t> free_;   ///< never-cached free blocks, a stack: the one freed last is reused first
  PrefixCache cache_;
};

}  // namespace lg::runtime
