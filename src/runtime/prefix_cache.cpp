#include "runtime/prefix_cache.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace lg::runtime {

namespace {
constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv_bytes(uint64_t h, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= kFnvPrime;
  }
  return h;
}
}  // namespace

uint64_t block_key(uint64_t parent_uid, std::span<const int32_t> tokens) {
  uint64_t h = fnv_bytes(kFnvOffset, parent_uid, 8);
  for (const int32_t t : tokens) h = fnv_bytes(h, static_cast<uint32_t>(t), 4);
  return h;
}

PrefixCache::PrefixCache(int64_t num_blocks, int64_t block_size)
    : block_size_(block_size), slots_(static_cast<size_t>(num_blocks)) {}

bool PrefixCache::same_content(int32_t b, const BlockIdentity& parent, std::span<const int32_t> tokens) const {
  const Slot& s = slots_[static_cast<size_t>(b)];
  if (s.parent_uid != parent.uid || static_cast<int64_t>(tokens.size()) != block_size_) return false;
  const auto at = tokens_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_;
  return std::equal(tokens.begin(), tokens.end(), at);
}

int32_t PrefixCache::find(const BlockIdentity& parent, std::span<const int32_t> tokens) const {
  const auto it = index_.find(block_key(parent.uid, tokens));
  if (it == index_.end() || !same_content(it->second, parent, tokens)) return -1;
  return it->second;
}

const BlockIdentity& PrefixCache::name(int32_t b, const BlockIdentity& parent, std::span<const int32_t> tokens) {
  Slot& s = slots_[static_cast<size_t>(b)];
  if (s.named) throw Error("prefix cache: block " + std::to_string(b) + " named twice");
  if (static_cast<int64_t>(tokens.size()) != block_size_)
    throw Error("prefix cache: a block holds " + std::to_string(block_size_) + " tokens, named with " +
                std::to_string(tokens.size()));
  if (tokens_.empty()) tokens_.assign(slots_.size() * static_cast<size_t>(block_size_), 0);
  s.named = true;
  s.parent_uid = parent.uid;
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_);
  if (const int32_t same = find(parent, tokens); same >= 0) {
    s.id = slots_[static_cast<size_t>(same)].id;  // a private copy: same content, same identity
    return s.id;
  }
  s.id = {next_uid_++};
  s.key = block_key(parent.uid, tokens);
  // A key taken by other content (a 64-bit collision: an entry of the same parent uid and tokens
  // would have been found above) leaves this block unindexed: a miss.
  s.indexed = index_.emplace(s.key, b).second;
  return s.id;
}

const BlockIdentity* PrefixCache::identity(int32_t b) const {
  const Slot& s = slots_[static_cast<size_t>(b)];
  return s.named ? &s.id : nullptr;
}

void PrefixCache::forget(int32_t b) {
  Slot& s = slots_[static_cast<size_t>(b)];
  if (s.parked) unpark(b);
  if (s.indexed) index_.erase(s.key);
  s = Slot{};
}

void PrefixCache::park(int32_t b) {
  Slot& s = slots_[static_cast<size_t>(b)];
  if (!s.indexed || s.parked) throw Error("prefix cache: block " + std::to_string(b) + " cannot be parked");
  s.parked = true;
  s.prev = tail_;
  s.next = -1;
  if (tail_ >= 0) slots_[static_cast<size_t>(tail_)].next = b;
  else head_ = b;
  tail_ = b;
  ++parked_;
}

void PrefixCache::unpark(int32_t b) {
  Slot& s = slots_[static_cast<size_t>(b)];
  if (!s.parked) throw Error("prefix cache: block " + std::to_string(b) + " is not parked");
  if (s.prev >= 0) slots_[static_cast<size_t>(s.prev)].next = s.next;
  else head_ = s.next;
  if (s.next >= 0) slots_[static_cast<size_t>(s.next)].prev = s.prev;
  else tail_ = s.prev;
  s.parked = false;
  s.prev = s.next = -1;
  --parked_;
}

int32_t PrefixCache::evict() {
  const int32_t b = head_;
  if (b < 0) return -1;
  forget(b);
  ++evictions_;
  return b;
}

}  // namespace lg::runtime
