// Batched steps: rewrites the forward graph of one sequence into the graph of a step over a ragged
// batch of sequences (docs/language.md, "Batched steps"). The tokens of all sequences are one
// token axis T (as vLLM and FlashInfer flatten them); what tells them apart is three inputs the
// runtime fills:
//   seq: i32[T]              the sequence (row of block_table) of each token
//   block_table: i32[B, MB]  per sequence, the pool blocks holding its positions (MB = ceil(S / bs))
//   rows: i32[B]             per sequence, the token whose result row the step returns (its last)
// Every state is per sequence and paged along its position axis (the axis its writes scatter on,
// of size S): it becomes one pool of num_blocks * block_size rows, and its writes and the
// attention that reads it address rows through the block table (ir.h, Op::StateWrite). The
// result keeps one row per sequence, so the rows it is made of (the LM head, the final norm, and
// whatever only they read) are computed for B rows instead of T.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace lg::ir {

struct BatchOptions {
  int64_t block_size = 16;   ///< positions per KV block
  int64_t num_blocks = 0;    ///< blocks in the pool (>= 1)
  int64_t max_batch = 256;   ///< B: sequences per step (>= 1)
  int64_t max_tokens = 0;    ///< T: tokens per step, all sequences together (0: S)
};

/// Rewrites `g` (a verified graph of one sequence: inputs tokens/pos i32[T], one output [T, ...],
/// states written along an axis of size S) in place into the batched graph, and verifies it.
/// Symbol 1 is B; inputs seq, block_table and rows are appended; g.batching is set. Throws
/// lg::Error naming the state or node for a graph it cannot page: a state never written, written
/// along different axes or at other positions than the input pos, or read other than whole by
/// attention; attention at other positions than pos; a node that mixes the tokens of
/// the step (a reduction, contraction, gather, slice, concat, top-k or reshape along T, or a
/// shape with T twice: a token may read the others only through the KV cache); an output without
/// T rows; bad options.
void make_batched(Graph& g, const BatchOptions& opts);

/// Per node, whether an output or a final state depends on it (inputs always count as live).
std::vector<char> live_nodes(const Graph& g);

/// Removes the nodes that neither an output nor a final state depends on, renumbering the rest
/// (topological order kept).
void remove_dead_nodes(Graph& g);

}  // namespace lg::ir
