// Automatic prefix caching (vLLM's): which KV blocks hold which token prefix, so that a request
// whose prompt starts with tokens another request already computed reads their blocks instead
// of computing them again. A full block's content is every token up to its end; a uid names it
// (BlockIdentity). A block is indexed under block_key(uid of the block before it, its token
// ids); a match is then confirmed exactly (the candidate's tokens, and the uid before it), so a
// 64-bit collision costs a cache miss, never a wrong answer.
//
// Why the parent's uid rather than, as vLLM does, a chain of content hashes (a block's hash =
// hash(the previous block's hash, its tokens))? vLLM takes its hash for the content and keeps
// every block of one hash, so equal content under one key is no conflict there. Here a match
// confirms the parent's uid, so the key hashes exactly what a match confirms: keyed by content
// hash, two entries could share a key without matching each other, and the one indexed first
// kept the other out. That happened: the same content gets a second uid when it is computed
// again after its block was evicted, while a block indexed after a private copy (see name) of
// the evicted block lives on; the tokens after it, computed again, found their key taken and
// were never cached (tests/runtime/prefix_cache_test.cpp,
// AnEntryWhoseParentWasEvictedDoesNotHideTheSameTokensComputedAgain). With the uid, never
// reused, in the key, an entry whose parent content is gone shares its key with no other
// content (but for a collision) and waits, unreachable and harmless, to be evicted. Every match
// is confirmed, so a fast 64-bit hash is enough (vLLM, which confirms none, offers SHA-256).
//
// This class is the index and the eviction order; the BlockManager (kv_blocks.h) owns the
// reference counts and decides when a block is named, parked (no holder, kept for reuse) or
// evicted (its content forgotten, the block reused for other tokens).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace lg::runtime {

/// The index key of a block holding `tokens` right after the content named `parent_uid`: 64-bit
/// FNV-1a over the 8 bytes of `parent_uid` then the 4 bytes of each token id, each
/// little-endian. The first block of a sequence has parent uid 0.
uint64_t block_key(uint64_t parent_uid, std::span<const int32_t> tokens);

/// What a full block holds: `uid` names its exact content (the tokens of every position up to
/// its end) and is never reused for other content, unlike a block id or a key. The root, before
/// any block, is uid 0.
struct BlockIdentity {
  uint64_t uid = 0;
};

/// The index of cached full blocks of one pool (block ids 0 .. num_blocks-1) and the LRU order
/// of the ones no sequence holds. Not thread-safe (one owner, as the BlockManager).
class PrefixCache {
 public:
  PrefixCache(int64_t num_blocks, int64_t block_size);

  /// The indexed block holding exactly `tokens` (block_size of them) right after the content
  /// `parent`, or -1.
  int32_t find(const BlockIdentity& parent, std::span<const int32_t> tokens) const;
  /// Names full block `b`: it holds `tokens` right after the content `parent`. Indexes it, unless
  /// a block with that content is indexed already: then `b` is a private copy that shares its
  /// identity (blocks after it chain on) but is not found, nor kept once freed. Returns b's
  /// identity. Throws lg::Error if `b` is named already.
  const BlockIdentity& name(int32_t b, const BlockIdentity& parent, std::span<const int32_t> tokens);
  /// b's identity, or null when `b` is not named (not full yet, or since reused).
  const BlockIdentity* identity(int32_t b) const;
  /// Whether `b` is in the index (find can return it).
  bool indexed(int32_t b) const { return slots_[static_cast<size_t>(b)].indexed; }
  /// Drops b's name and index entry: `b` is about to hold other tokens.
  void forget(int32_t b);

  /// Puts indexed block `b`, which no sequence holds any more, at the recent end of the LRU
  /// order: it stays findable until evicted.
  void park(int32_t b);
  /// Takes parked block `b` out of the LRU order (a sequence holds it again).
  void unpark(int32_t b);
  bool parked(int32_t b) const { return slots_[static_cast<size_t>(b)].parked; }
  /// Blocks parked: cached, held by no sequence, evictable.
  int64_t parked_count() const { return parked_; }
  /// Forgets and unparks the least recently parked block and returns it; -1 when none is parked.
  int32_t evict();
  /// Blocks evicted so far.
  int64_t evictions() const { return evictions_; }

 private:
  struct Slot {
    BlockIdentity id;
    uint64_t parent_uid = 0;
    uint64_t key = 0;  ///< block_key(parent_uid, its tokens): its index entry's key when indexed
    bool named = false, indexed = false, parked = false;
    int32_t prev = -1, next = -1;  ///< LRU neighbours while parked
  };
  bool same_content(int32_t b, const BlockIdentity& parent, std::span<const int32_t> tokens) const;

  int64_t block_size_;
  std::vector<Slot> slots_;
  std::vector<int32_t> tokens_;  ///< [num_blocks * block_size]: each named block's tokens
  std::unordered_map<uint64_t, int32_t> index_;  ///< key -> indexed block
  int32_t head_ = -1, tail_ = -1;                ///< LRU: head evicted first
  int64_t parked_ = 0, evictions_ = 0;
  uint64_t next_uid_ = 1;
};

}  // namespace lg::runtime
