#include "runtime/solo_sequence.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace lg::runtime {

SoloSequence::SoloSequence(Lane& lane, BlockManager* blocks)
    : lane_(lane), own_(lane.limits().num_blocks, lane.limits().block_size), blocks_(blocks ? blocks : &own_) {}

SoloSequence::~SoloSequence() { blocks_->release(table_); }

void SoloSequence::restart() {
  blocks_->release(table_);
  pos_ = 0;
}

SeqStep SoloSequence::next(std::span<const int32_t> tokens, bool want_logits) {
  if (tokens.empty()) throw Error("a step needs at least one token");
  const int64_t end = pos_ + static_cast<int64_t>(tokens.size());
  if (end > lane_.limits().max_seq)
    throw Error("positions " + std::to_string(pos_) + ".." + std::to_string(end - 1) + " do not fit the context of " +
                std::to_string(lane_.limits().max_seq) + " tokens");
  if (!blocks_->grow(table_, end))
    throw Error("the KV pool of " + std::to_string(lane_.limits().pool_tokens()) + " positions is full (" +
                std::to_string(blocks_->free_blocks()) + " blocks free)");
  SeqStep s;
  s.tokens = tokens;
  s.start_pos = pos_;
  s.blocks = table_;
  s.want_logits = want_logits;
  return s;
}

SeqResult SoloSequence::feed(std::span<const int32_t> tokens, bool want_logits) {
  if (tokens.empty()) throw Error("a step needs at least one token");
  const auto chunk = static_cast<size_t>(lane_.limits().max_tokens);
  SeqResult r;
  for (size_t at = 0; at < tokens.size(); at += chunk) {
    const auto part = tokens.subspan(at, std::min(chunk, tokens.size() - at));
    const SeqStep s = next(part, want_logits && at + part.size() == tokens.size());
    r = std::move(lane_.step(std::span<const SeqStep>(&s, 1)).at(0));
    advance(static_cast<int64_t>(part.size()));
  }
  return r;
}

}  // namespace lg::runtime
