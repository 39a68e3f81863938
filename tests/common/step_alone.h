// Steps one sequence on a lane with the identity block table (blocks 0, 1, 2, ...): what the
// lane tests that predate batched steps need to run a sequence alone from any position. The
// lane's pool must hold the positions (its default pool holds at least one context).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/lane.h"

namespace lg::testing {

inline SeqResult step_alone(Lane& lane, std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) {
  const int64_t bs = lane.limits().block_size;
  const int64_t end = start_pos + static_cast<int64_t>(tokens.size());
  std::vector<int32_t> blocks(static_cast<size_t>(std::max<int64_t>((end + bs - 1) / bs, 1)));
  for (size_t j = 0; j < blocks.size(); ++j) blocks[j] = static_cast<int32_t>(j);
  SeqStep s;
  s.tokens = tokens;
  s.start_pos = start_pos;
  s.blocks = blocks;
  s.want_logits = want_logits;
  return lane.step(std::span<const SeqStep>(&s, 1)).at(0);
}

}  // namespace lg::testing
