#include "runtime/kv_blocks.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace lg::runtime {

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size)
    : block_size_(block_size), cache_(std::max<int64_t>(num_blocks, 0), block_size) {
  if (num_blocks < 1 || block_size < 1 || num_blocks > (int64_t{1} << 31) - 1)
    throw Error("KV pool: " + std::to_string(num_blocks) + " blocks of " + std::to_string(block_size) +
                " positions; both must be >= 1");
  refs_.assign(static_cast<size_t>(num_blocks), 0);
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int64_t b = num_blocks; b-- > 0;) free_.push_back(static_cast<int32_t>(b));
}

bool BlockManager::grow(std::vector<int32_t>& table, int64_t positions) {
  const int64_t need = blocks_for(positions) - static_cast<int64_t>(table.size());
  if (need <= 0) return true;
  if (need > free_blocks()) return false;
  for (int64_t k = 0; k < need; ++k) {
    int32_t b = -1;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = cache_.evict();  // parked: nobody holds it
    }
    refs_[static_cast<size_t>(b)] = 1;
    table.push_back(b);
  }
  return true;
}

void BlockManager::release(std::vector<int32_t>& table) {
  // Last block first: of one sequence's cached blocks, its tail (the least likely to be shared)
  // is parked first and so evicted first, as vLLM frees them.
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    const int32_t b = *it;
    if (b < 0 || b >= num_blocks() || refs_[static_cast<size_t>(b)] < 1)
      throw Error("KV pool: block " + std::to_string(b) + " released but not held");
    if (--refs_[static_cast<size_t>(b)] > 0) continue;
    if (cache_.indexed(b)) {
      cache_.park(b);
    } else {
      cache_.forget(b);  // a private copy, or a block never named
      free_.push_back(b);
    }
  }
  table.clear();
}

int64_t BlockManager::take_cached_prefix(std::vector<int32_t>& table, std::span<const int32_t> tokens,
                                         int64_t max_blocks) {
  if (!table.empty()) throw Error("KV pool: a cached prefix is taken into an empty block table");
  BlockIdentity parent;
  for (int64_t j = 0; j < max_blocks && (j + 1) * block_size_ <= static_cast<int64_t>(tokens.size()); ++j) {
    const int32_t b = cache_.find(parent, tokens.subspan(static_cast<size_t>(j * block_size_),
                                                          static_cast<size_t>(block_size_)));
    if (b < 0) break;
    if (refs_[static_cast<size_t>(b)]++ == 0) cache_.unpark(b);
    table.push_back(b);
    parent = *cache_.identity(b);
  }
  return static_cast<int64_t>(table.size());
}

int64_t BlockManager::cache_full_blocks(std::span<const int32_t> table, std::span<const int32_t> tokens, int64_t from,
                                        int64_t to) {
  if (to > static_cast<int64_t>(table.size()) || to * block_size_ > static_cast<int64_t>(tokens.size()))
    throw Error("KV pool: " + std::to_string(to) + " full blocks named, but the table has " +
                std::to_string(table.size()) + " blocks for " + std::to_string(tokens.size()) + " tokens");
  for (int64_t j = from; j < to; ++j) {
    const BlockIdentity* parent = j == 0 ? nullptr : cache_.identity(table[static_cast<size_t>(j - 1)]);
    if (j > 0 && !parent) throw Error("KV pool: block " + std::to_string(j) + " named before the one it follows");
    cache_.name(table[static_cast<size_t>(j)], parent ? *parent : BlockIdentity{},
                tokens.subspan(static_cast<size_t>(j * block_size_), static_cast<size_t>(block_size_)));
  }
  return std::max(from, to);
}

}  // namespace lg::runtime
