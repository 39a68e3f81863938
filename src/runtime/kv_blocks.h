// The KV pool's block allocator. A lane holds the KV cache of every sequence in one pool of
// fixed-size blocks (vLLM's PagedAttention); which blocks a sequence's positions live in is its
// block table, owned by the runtime: this class hands out and takes back block ids with a free
// list, so memory follows the tokens a sequence holds rather than the longest it could get.
#pragma once

#include <cstdint>
#include <vector>

namespace lg::runtime {

/// Block ids 0 .. num_blocks-1 of one lane's pool. Not thread-safe: one owner (the generation
/// loop, the scheduler) allocates for all the sequences it runs.
class BlockManager {
 public:
  /// Throws lg::Error unless num_blocks >= 1 and block_size >= 1.
  BlockManager(int64_t num_blocks, int64_t block_size);

  int64_t num_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_blocks() const { return num_blocks() - free_blocks(); }
  /// Blocks that hold `positions` positions (ceil).
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  /// Extends `table` with free blocks until it holds `positions` positions. Returns false, and
  /// takes nothing, when too few blocks are free.
  bool grow(std::vector<int32_t>& table, int64_t positions);
  /// Returns every block of `table` to the free list (a shared block when its last holder lets
  /// it go) and empties the table.
  void release(std::vector<int32_t>& table);

 private:
  int64_t block_size_;
  std::vector<int32_t> refs_;   ///< holders per block
  std::vector<int32_t> free_;   ///< a stack: the block freed last is reused first (warm in caches)
};

}  // namespace lg::runtime
