// The KV block manager's prefix cache (runtime/prefix_cache.h, runtime/kv_blocks.h): the index
// key, exact matching, reference counts, LRU eviction of blocks no sequence holds, and that a
// block a sequence holds is never evicted.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/kv_blocks.h"
#include "runtime/prefix_cache.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

// FNV-1a written out over an explicit little-endian byte string, to hold block_key to the
// published algorithm rather than to itself.
uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

// The parent in the key was the parent block's key (a hash chain, as vLLM's) and is now the
// parent's uid: keyed by content hash, an entry whose parent was evicted could keep the same
// tokens after the same content computed again out of the index (see prefix_cache.h and
// AnEntryWhoseParentWasEvictedDoesNotHideTheSameTokensComputedAgain below). The hash is the same.
TEST(PrefixCache, BlockKeyIsFnv1aOfTheParentUidThenTheTokens) {
  const std::vector<int32_t> toks{1, 258, -1};
  const uint64_t parent_uid = 0x0102030405060708ull;
  const std::vector<uint8_t> bytes{8, 7, 6, 5, 4, 3, 2, 1,  // parent uid, little-endian
                                   1, 0, 0, 0, 2, 1, 0, 0, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(block_key(parent_uid, toks), fnv1a(bytes));
  EXPECT_EQ(fnv1a({}), 14695981039346656037ull);
  EXPECT_EQ(fnv1a({'a'}), 0xaf63dc4c8601ec8cull);  // the FNV-1a 64 test vector for "a"
  // The same tokens after another parent, or in another order, are another key.
  EXPECT_NE(block_key(parent_uid, toks), block_key(parent_uid + 1, toks));
  EXPECT_NE(block_key(0, std::vector<int32_t>{1, 2}), block_key(0, std::vector<int32_t>{2, 1}));
}

TEST(PrefixCache, AMatchIsTheSameTokensAfterTheSameContent) {
  PrefixCache c(4, 2);
  const std::vector<int32_t> x{1, 2}, y{3, 4};
  const BlockIdentity a0 = c.name(0, {}, x);
  const BlockIdentity a1 = c.name(1, a0, y);
  EXPECT_NE(a1.uid, a0.uid);
  EXPECT_EQ(c.find({}, x), 0);
  EXPECT_EQ(c.find(a0, y), 1);
  EXPECT_EQ(c.find({}, y), -1);  // y, but at the start
  EXPECT_EQ(c.find(a0, x), -1);
  // y after other content (another uid) is not a match.
  EXPECT_EQ(c.find(BlockIdentity{a0.uid + 100}, y), -1);
  // Block 2 holds x too (computed by another sequence at the same time): a private copy.
  const BlockIdentity b0 = c.name(2, {}, x);
  EXPECT_EQ(b0.uid, a0.uid);
  EXPECT_FALSE(c.indexed(2));
  EXPECT_TRUE(c.indexed(0));
  EXPECT_EQ(c.find({}, x), 0);
  EXPECT_THROW(c.name(2, {}, x), Error);
  c.forget(0);  // block 0 reused for other tokens: x is no longer found, nor y after it
  EXPECT_EQ(c.find({}, x), -1);
  EXPECT_EQ(c.identity(0), nullptr);
}

// The same tokens after the same content computed twice (two uids) are two entries, each found
// after its own parent only, though the first one's parent is no longer indexed.
TEST(PrefixCache, TheSameTokensAfterEachUidOfTheSameContentAreIndexedApart) {
  PrefixCache c(6, 2);
  const std::vector<int32_t> x{1, 2}, y{3, 4}, z{5, 6};
  const BlockIdentity a0 = c.name(0, {}, x);
  const BlockIdentity b0 = c.name(1, {}, x);  // a private copy of block 0
  const BlockIdentity b1 = c.name(2, b0, y);
  c.forget(0);  // evicted: x is no longer found; block 2 stays indexed after uid a0
  EXPECT_EQ(c.find({}, x), -1);
  const BlockIdentity e0 = c.name(3, {}, x);  // x computed again: a new uid
  EXPECT_NE(e0.uid, a0.uid);
  EXPECT_TRUE(c.indexed(3));
  const BlockIdentity e1 = c.name(4, e0, y);
  EXPECT_TRUE(c.indexed(4));
  EXPECT_NE(e1.uid, b1.uid);
  c.name(5, e1, z);
  EXPECT_TRUE(c.indexed(5));
  EXPECT_EQ(c.find({}, x), 3);
  EXPECT_EQ(c.find(e0, y), 4);
  EXPECT_EQ(c.find(e1, z), 5);
  EXPECT_EQ(c.find(b0, y), 2);  // still the right block after its own content
  EXPECT_EQ(c.find(b1, z), -1);
}

// Tokens 0 .. n-1 of a sequence's own: `base` makes them differ between sequences.
std::vector<int32_t> seq_tokens(int32_t base, int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(base + i);
  return t;
}

TEST(PrefixCache, FullBlocksAreSharedWithReferenceCountsAndKeptWhenFreed) {
  BlockManager m(10, 4);
  const std::vector<int32_t> a = seq_tokens(100, 10);  // 2 full blocks and 2 tokens
  std::vector<int32_t> ta;
  ASSERT_TRUE(m.grow(ta, 10));
  EXPECT_EQ(m.cache_full_blocks(ta, a, 0, 2), 2);
  EXPECT_THROW(m.cache_full_blocks(ta, a, 0, 3), Error);  // block 2 is not full
  EXPECT_TRUE(m.cached(ta[0]));
  EXPECT_TRUE(m.cached(ta[1]));
  EXPECT_FALSE(m.cached(ta[2]));

  // b starts with a's first 7 tokens: it takes a's first block only.
  std::vector<int32_t> b(a.begin(), a.begin() + 7);
  b.push_back(-5);
  b.push_back(-6);
  std::vector<int32_t> tb;
  EXPECT_EQ(m.take_cached_prefix(tb, b, 100), 1);
  EXPECT_EQ(tb, std::vector<int32_t>{ta[0]});
  EXPECT_EQ(m.holders(ta[0]), 2);
  EXPECT_THROW(m.take_cached_prefix(tb, b, 100), Error);  // the table is not empty
  // c is a itself: both full blocks, but not more than asked.
  std::vector<int32_t> tc;
  EXPECT_EQ(m.take_cached_prefix(tc, a, 1), 1);
  m.release(tc);
  EXPECT_EQ(m.take_cached_prefix(tc, a, 100), 2);
  EXPECT_EQ(tc, (std::vector<int32_t>{ta[0], ta[1]}));
  EXPECT_EQ(m.holders(ta[0]), 3);
  EXPECT_EQ(m.used_blocks(), 3);

  m.release(ta);  // a finishes: its blocks stay held by b and c
  EXPECT_EQ(m.holders(tc[0]), 2);
  EXPECT_EQ(m.used_blocks(), 2);
  EXPECT_EQ(m.cached_free_blocks(), 0);
  m.release(tc);
  m.release(tb);
  // Nothing held; a's two full blocks are free but cached, its partial block simply free.
  EXPECT_EQ(m.used_blocks(), 0);
  EXPECT_EQ(m.free_blocks(), 10);
  EXPECT_EQ(m.cached_free_blocks(), 2);
  std::vector<int32_t> td;
  EXPECT_EQ(m.take_cached_prefix(td, a, 100), 2);
  EXPECT_EQ(m.cached_free_blocks(), 0);
  EXPECT_EQ(m.used_blocks(), 2);
  m.release(td);
  std::vector<int32_t> not_held{3};
  EXPECT_THROW(m.release(not_held), Error);
}

TEST(PrefixCache, AFreeBlockNeverCachedIsUsedBeforeACachedOneIsEvicted) {
  BlockManager m(6, 2);
  std::vector<int32_t> ta, tb;
  const auto a = seq_tokens(10, 4), b = seq_tokens(20, 4);
  ASSERT_TRUE(m.grow(ta, 4));
  ASSERT_TRUE(m.grow(tb, 4));
  m.cache_full_blocks(ta, a, 0, 2);
  m.cache_full_blocks(tb, b, 0, 2);
  m.release(ta);  // parked, least recent first: a[1], a[0], then b[1], b[0]
  m.release(tb);
  ASSERT_EQ(m.cached_free_blocks(), 4);
  std::vector<int32_t> tc;
  ASSERT_TRUE(m.grow(tc, 4));  // the 2 never-cached blocks
  EXPECT_EQ(m.evictions(), 0);
  ASSERT_TRUE(m.grow(tc, 6));  // evicts a's tail block, the least recently freed
  EXPECT_EQ(m.evictions(), 1);
  EXPECT_EQ(tc.back(), ta[1]);
  std::vector<int32_t> probe;
  EXPECT_EQ(m.take_cached_prefix(probe, a, 100), 1);  // a's first block is still there
  m.release(probe);  // ... and is now the most recently freed
  ASSERT_TRUE(m.grow(tc, 8));
  EXPECT_EQ(tc.back(), tb[1]);
  ASSERT_TRUE(m.grow(tc, 10));
  EXPECT_EQ(tc.back(), tb[0]);
  EXPECT_EQ(m.evictions(), 3);
  EXPECT_EQ(m.take_cached_prefix(probe, b, 100), 0);
  EXPECT_EQ(m.take_cached_prefix(probe, a, 100), 1);
  EXPECT_EQ(probe, std::vector<int32_t>{ta[0]});
  EXPECT_EQ(m.free_blocks(), 0);
  m.release(probe);
  m.release(tc);
  EXPECT_EQ(m.used_blocks(), 0);
}

TEST(PrefixCache, ABlockASequenceHoldsIsNeverEvicted) {
  BlockManager m(4, 2);
  std::vector<int32_t> running, done;
  const auto a = seq_tokens(1, 4), b = seq_tokens(50, 4);
  ASSERT_TRUE(m.grow(running, 4));
  ASSERT_TRUE(m.grow(done, 4));
  m.cache_full_blocks(running, a, 0, 2);
  m.cache_full_blocks(done, b, 0, 2);
  m.release(done);
  std::vector<int32_t> t;
  EXPECT_FALSE(m.grow(t, 6));  // 3 blocks wanted, 2 free: nothing taken
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(m.cached_free_blocks(), 2);
  ASSERT_TRUE(m.grow(t, 4));  // the two parked blocks of `done`, evicted
  EXPECT_EQ(m.evictions(), 2);
  for (int32_t blk : running) EXPECT_EQ(m.holders(blk), 1);
  EXPECT_FALSE(m.grow(t, 5));
  // A parked block taken back by a sequence is held: no longer evictable.
  m.release(t);
  m.release(running);
  std::vector<int32_t> again;
  EXPECT_EQ(m.take_cached_prefix(again, a, 100), 2);
  std::vector<int32_t> other;
  ASSERT_TRUE(m.grow(other, 4));
  EXPECT_FALSE(m.grow(other, 5));
  EXPECT_EQ(m.take_cached_prefix(t, a, 100), 2);  // still cached, shared
  EXPECT_EQ(m.holders(again[0]), 2);
  m.release(t);
  m.release(again);
  m.release(other);
  EXPECT_EQ(m.used_blocks(), 0);
}

// A block named as a private copy (the same content computed twice at once) is not kept when
// freed, but the blocks after it chain on from the content it shares.
TEST(PrefixCache, APrivateCopyChainsOnButIsNotKept) {
  BlockManager m(8, 2);
  const auto x = seq_tokens(7, 2);
  auto xy = x;
  xy.push_back(40);
  xy.push_back(41);
  std::vector<int32_t> ta, tb;
  ASSERT_TRUE(m.grow(ta, 2));
  ASSERT_TRUE(m.grow(tb, 4));
  m.cache_full_blocks(ta, x, 0, 1);
  m.cache_full_blocks(tb, xy, 0, 2);  // b's first block: a copy of a's
  EXPECT_FALSE(m.cached(tb[0]));
  EXPECT_TRUE(m.cached(tb[1]));
  std::vector<int32_t> tc;
  EXPECT_EQ(m.take_cached_prefix(tc, xy, 100), 2);
  EXPECT_EQ(tc, (std::vector<int32_t>{ta[0], tb[1]}));
  m.release(tb);
  EXPECT_EQ(m.cached_free_blocks(), 0);  // b's copy freed outright; its second block held by c
  m.release(tc);
  m.release(ta);
  EXPECT_EQ(m.cached_free_blocks(), 2);
  EXPECT_EQ(m.used_blocks(), 0);
}

// A block indexed after a private copy outlives the block it copied: once that one is evicted its
// entry can no longer be reached (nothing indexed holds its parent content), and it must not
// keep the same tokens, computed again after the content computed again, out of the index.
TEST(PrefixCache, AnEntryWhoseParentWasEvictedDoesNotHideTheSameTokensComputedAgain) {
  BlockManager m(4, 2);
  const std::vector<int32_t> x{1, 2}, xy{1, 2, 3, 4};
  std::vector<int32_t> ta, tc, td, te, tf;
  ASSERT_TRUE(m.grow(ta, 2));
  ASSERT_TRUE(m.grow(tc, 4));
  m.cache_full_blocks(ta, x, 0, 1);
  m.cache_full_blocks(tc, xy, 0, 2);  // c's first block: a private copy of a's; its second indexed
  ASSERT_FALSE(m.cached(tc[0]));
  ASSERT_TRUE(m.cached(tc[1]));
  m.release(ta);  // a's block parked ...
  ASSERT_TRUE(m.grow(td, 4));  // ... then evicted, while c still runs
  EXPECT_EQ(m.evictions(), 1);
  m.release(td);
  EXPECT_EQ(m.take_cached_prefix(tf, xy, 2), 0);  // x is no longer found, nor c's block after it
  ASSERT_TRUE(m.grow(te, 4));  // e has c's prompt and computes both blocks again
  m.cache_full_blocks(te, xy, 0, 2);
  EXPECT_TRUE(m.cached(te[0]));
  EXPECT_TRUE(m.cached(te[1]));
  EXPECT_EQ(m.take_cached_prefix(tf, xy, 2), 2);
  EXPECT_EQ(tf, te);
  m.release(tf);
  m.release(te);
  m.release(tc);
  EXPECT_EQ(m.used_blocks(), 0);
}

}  // namespace
}  // namespace lg::runtime
