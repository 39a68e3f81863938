// Stages: the unit the compiled lane launches. Lifting (lift.h) turns every compute node of the
// IR into a stage of one of a few kinds; the fusion passes (passes.h) merge stages; the CPU
// staged executor (staged_executor.h) and the CUDA renderer (emit/cuda) both read this one
// structure, so the program the CPU checks is the program the GPU runs.
//
// Nodes fall in three classes:
//   - buffers: sources (Input, Param, State), read by a load;
//   - inline nodes: views (Reshape, Permute, Slice, Concat), Const, Arange, and elementwise nodes
//     that a fusion pass dissolved into their readers. They are recomputed inside every stage that
//     reads them: a view becomes index arithmetic, an elementwise node an expression;
//   - stage nodes: every other node belongs to exactly one stage. Its value leaves the stage only
//     through a store (a buffer of its own) when a node outside the stage reads it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace lg::lift {

/// What a stage computes, i.e. which kernel template the emitter uses for it.
enum class StageKind : uint8_t {
  Map,         ///< elementwise over the shape of its stores (views folded into indexing)
  Reduce,      ///< one or more reductions over rows, with elementwise prologue and epilogue
  Gemm,        ///< one or more MatMuls sharing their A operand, with prologue and epilogue
  Gather,      ///< rows of a table picked by an index (embedding lookup), with epilogue
  StateWrite,  ///< writes a value into a state (KV cache) at runtime positions
  Attention,   ///< causal GQA attention over a KV cache
  TopK,        ///< the k largest along the last axis, values and indices (rendered as an element stage)
  Experts,     ///< routed expert matmuls (moe_gate_up or moe_down): reads only the experts picked
};
const char* stage_kind_name(StageKind k);

/// One stage: a set of IR nodes computed together by one kernel body.
struct Stage {
  StageKind kind = StageKind::Map;
  /// The stage nodes, in graph (topological) order. Inline nodes are not listed.
  std::vector<ir::ValueId> nodes;
  /// The nodes whose values leave the stage into a buffer of their own (recomputed by
  /// `update_stores` after every pass). StateWrite nodes in `nodes` write into their state.
  std::vector<ir::ValueId> stores;
};

/// A kernel launch: stages that do not depend on each other, run by one kernel whose blocks are
/// split between them (horizontal fusion). Most launches hold one stage.
struct Launch {
  std::vector<int32_t> stages;
};

/// A lifted program: the graph, which of its nodes are inline, the stages in execution order,
/// and the launches that run them.
struct StagedProgram {
  ir::Graph graph;
  /// Per node: index of its stage, or -1 (buffer or inline).
  std::vector<int32_t> stage_of;
  /// Per node: true if the node is recomputed by its readers (see the file comment).
  std::vector<bool> is_inline;
  std::vector<Stage> stages;
  std::vector<Launch> launches;
};

/// Rebuilds `stage_of`, every stage's `stores`, sorts stages into a valid execution order
/// (producers first, readers of a state version before its overwrite), and resets `launches`
/// to one stage each. Called by lifting and after every fusion pass.
void normalize(StagedProgram& p);
class NodeIndex;
/// The same with the node index of `p` (stage_graph.h) that a merging pass keeps across merges.
void normalize(StagedProgram& p, NodeIndex& index);

// Readers, inputs and dependencies of stages, and whether a merge would make a cycle:
// StageGraph (stage_graph.h), which computes them once per state of the program.

/// True if stages a and b merged would overwrite a state version that the merged stage also
/// reads (a cache read and its overwrite in one kernel: threads would race on the rows). The CPU
/// staged executor computes before it writes and cannot see this; the passes must not make it.
bool merge_races_on_state(const StagedProgram& p, int32_t a, int32_t b);

/// Moves every node of stage `from` into stage `into` (kind of `into` kept) and removes `from`.
/// Callers run normalize() afterwards.
void merge_stages(StagedProgram& p, int32_t into, int32_t from);

/// Per node of g: true for a constant expression, a Const or Arange or an elementwise op or view
/// of constants only (an eps and its cast). Such nodes name no statement in stage listings.
std::vector<bool> constant_nodes(const ir::Graph& g);

/// The source lines a stage covers, (file index, line), sorted and unique: those of its nodes and
/// of the inline nodes it evaluates, constants excepted. `constant` is constant_nodes(p.graph)
/// (computed once when listing every stage); without it, it is computed for this call.
std::set<std::pair<int32_t, int32_t>> stage_line_set(const StagedProgram& p, const Stage& s,
                                                     const std::vector<bool>* constant = nullptr);
/// The same as "file:line" strings.
std::vector<std::string> stage_lines(const StagedProgram& p, const Stage& s, const std::vector<bool>* constant = nullptr);


/// The runtime symbol a stage's loops run over: 0 (T, the tokens of the step) for nearly every
/// stage; 1 (B, the sequences) for the stages of a batched graph (ir/batch.h) that compute the
/// rows its result is gathered to. A stage's kernel takes that symbol's value as its `T`. Throws
/// lg::Error for a stage whose nodes loop over both (the lifter never makes one).
int32_t stage_rows_symbol(const StagedProgram& p, int32_t s);

/// Value of dim `d` for a given T (the runtime token count; symbol 0).
inline int64_t dim_value(const ir::Dim& d, int64_t T) { return d.is_const() ? d.coeff : d.coeff * T; }
/// Number of elements of `shape` for a given T.
int64_t numel(const ir::Shape& shape, int64_t T);
/// The same for values of every runtime symbol (symbols[i]: symbol i; T, then B in a batched graph).
inline int64_t dim_value(const ir::Dim& d, const std::vector<int64_t>& symbols) {
  return d.is_const() ? d.coeff : d.coeff * symbols.at(static_cast<size_t>(d.sym));
}
int64_t numel(const ir::Shape& shape, const std::vector<int64_t>& symbols);

}  // namespace lg::lift
