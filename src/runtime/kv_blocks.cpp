#include "runtime/kv_blocks.h"

#include <string>

#include "support/error.h"

namespace lg::runtime {

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size) : block_size_(block_size) {
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
    const int32_t b = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(b)] = 1;
    table.push_back(b);
  }
  return true;
}

void BlockManager::release(std::vector<int32_t>& table) {
  for (int32_t b : table) {
    if (b < 0 || b >= num_blocks() || refs_[static_cast<size_t>(b)] < 1)
      throw Error("KV pool: block " + std::to_string(b) + " released but not held");
    if (--refs_[static_cast<size_t>(b)] == 0) free_.push_back(b);
  }
  table.clear();
}

}  // namespace lg::runtime
