// The tensor IR: the forward pass of a .lg program, bound to a model's config, as an SSA graph of
// typed tensor operations (the ops and their meaning: ops.def, op_table.h). It is the contract
// between the front end (which lowers the checked AST into it), the CPU reference executor (which
// defines its meaning), and the lifter (which turns it into stages). Plain data: one node type,
// one op enum (from the op table), attributes in one struct. Layers are unrolled; state (the KV
// cache) is versioned so that ordering between a write and later reads is an ordinary data
// dependency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op_table.h"
#include "support/dtype.h"

namespace lg::ir {

/// Index of a node (= the value it produces) in Graph::nodes.
using ValueId = int32_t;

/// A dimension: `coeff` if sym < 0, else coeff * (runtime symbol `sym`). Runtime symbols are the
/// dims only known per step (T, the tokens in this step); everything else is bound from the
/// config when the graph is built. `T*H` (from a view) is {H, T}.
struct Dim {
  int64_t coeff = 0;
  int32_t sym = -1;
  static Dim constant(int64_t v) { return {v, -1}; }
  static Dim symbol(int32_t s, int64_t c = 1) { return {c, s}; }
  bool is_const() const { return sym < 0; }
  bool operator==(const Dim&) const = default;
};
using Shape = std::vector<Dim>;

/// Paged StateWrite and Attention (a graph made for batched steps, ir/batch.h) take two more
/// operands, seq: i32[T] and block_table: i32[B, MB], and `attrs.block_size` = bs > 0. The
/// state's position axis then holds blocks of bs rows from one pool shared by the sequences of a
/// step: position p of token t's sequence is the physical row
///     paged_row(t, p) = block_table[seq[t], p / bs] * bs + p % bs.
/// StateWrite writes value row t at paged_row(t, pos[t]); Attention's query t reads the rows
/// paged_row(t, 0 ..= pos[t]), so a token sees exactly the earlier positions of its own sequence.

/// Op attributes; which fields mean something depends on the op (see ops.def).
struct Attrs {
  int32_t index = -1;           ///< Input/Param/State: which one
  double scalar = 0;            ///< Const
  int32_t axis = 0;             ///< reductions, Slice, Concat, StateWrite (scatter axis)
  bool keepdim = false;         ///< reductions
  std::vector<int32_t> perm;    ///< Permute
  int64_t start = 0, stop = 0, step = 1;  ///< Slice (constant bounds)
  /// StateWrite: the state's leading axes fixed to these constant indices (e.g. {l} picks layer
  /// l of kcache[L, KV, S, Dh]); the value then has the remaining axes ([KV, T, Dh]), with the
  /// axis `axis` of the remaining ones (1: S) replaced by T and written at rows pos[t].
  std::vector<int64_t> fixed;
  double scale = 0;             ///< Attention: softmax scale (1/sqrt(Dh) unless the source says)
  int32_t gqa_group = 1;        ///< Attention: H / KV (query head h reads KV head h / gqa_group)
  /// Attention: a sliding window of this many positions (query at p sees keys p - window + 1 .. p,
  /// transformers' `kv_idx > q_idx - sliding_window`); 0: none (keys 0 .. p).
  int64_t window = 0;
  /// Attention: logit soft-capping (Gemma 2's attn_logit_softcapping): scores become
  /// softcap * tanh(scores / softcap) after the scale and before the mask and softmax; 0: none.
  double softcap = 0;
  int64_t block_size = 0;       ///< paged StateWrite / Attention: positions per KV block (see Op)
};

/// Where a node came from in the .lg source: the statement it was lowered from.
struct Span {
  int32_t file = -1;  ///< index into Graph::files
  int32_t line = 0, col = 0, end_line = 0, end_col = 0;
};

/// One operation. Its value has `dtype` and `shape`.
struct Node {
  Op op;
  DType dtype;
  Shape shape;
  std::vector<ValueId> operands;
  Attrs attrs;
  Span span;
  std::string name;  ///< the .lg binding it was assigned to, if any (e.g. "l3.q"): for dumps
};

struct InputInfo { std::string name; DType dtype; Shape shape; };
/// A weight: `tensor` is the checkpoint tensor name (layer templates already expanded). With
/// `transposed` (`= "name".T` in the .lg) the checkpoint stores the rank-2 param's transpose
/// (GPT-2's Conv1D weights are [in, out]): whoever loads it swaps the two axes, so the graph
/// sees `shape` and `x @ w.T` runs the same GEMM as an nn.Linear weight.
/// A param declared in an `experts e in 0..E` block is stacked: `parts[e]` names the checkpoint
/// tensor of slice e along axis 0 (each of shape shape[1:]), `tensor` the template with `{e}`
/// (for messages), and loaders concatenate the parts once at load time. `span` is the declaration
/// (its first, for params tied to one tensor), so a checkpoint that does not fit names its line.
struct ParamInfo {
  std::string name;
  std::string tensor;
  DType dtype;
  Shape shape;
  bool transposed = false;
  std::vector<std::string> parts = {};
  Span span = {};
};
struct StateInfo { std::string name; DType dtype; Shape shape; };
/// A runtime dim; `max` bounds it (T <= max sequence length).
struct SymbolInfo { std::string name; int64_t max; };

/// How a graph made for batched steps (ir/batch.h) lays out its per-sequence state.
struct Batching {
  int64_t block_size = 0;   ///< positions per KV block; 0: not batched (one sequence, row = position)
  int64_t num_blocks = 0;   ///< blocks in the pool: a state's position axis has num_blocks * block_size rows
  int64_t max_seq = 0;      ///< S: positions a sequence may hold
  int64_t blocks_per_seq() const { return block_size ? (max_seq + block_size - 1) / block_size : 0; }
  bool on() const { return block_size > 0; }
};

/// The forward graph. Nodes are in topological order (operands precede users).
struct Graph {
  std::string model;                 ///< the .lg model name (e.g. "qwen3")
  std::vector<std::string> files;    ///< source files, for Span::file
  std::vector<SymbolInfo> symbols;   ///< runtime dims; symbol 0 is T
  std::vector<InputInfo> inputs;
  std::vector<ParamInfo> params;
  std::vector<StateInfo> states;
  std::vector<Node> nodes;
  std::vector<ValueId> outputs;      ///< the forward's return values (logits f32[T, V])
  /// Last version of each state (indexed like `states`): what a step leaves in the cache.
  std::vector<ValueId> final_states;
  Batching batching;                 ///< set by ir::make_batched

  ValueId add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<ValueId>(nodes.size() - 1);
  }
  const Node& at(ValueId v) const { return nodes.at(static_cast<size_t>(v)); }
};

/// A possibly negative axis (-1: the last) of a rank-`rank` shape as an index from 0. No range
/// check: for axes the verifier (verify.h) has accepted.
inline int32_t positive_axis(int32_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int32_t>(rank) : axis; }

/// The length of the slice start:stop:step (0 <= start, step >= 1), as Python's len(range(start,
/// stop, step)): ceil((stop - start) / step), written so that no step, however large, overflows
/// (`(stop - start + step - 1) / step` did for a step near 2^63).
inline int64_t slice_length(int64_t start, int64_t stop, int64_t step) {
  return stop > start ? (stop - start - 1) / step + 1 : 0;
}

}  // namespace lg::ir
