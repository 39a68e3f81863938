// Lifting: the IR graph -> one stage per compute node, before any fusion. This is where a program
// is refused when a statement has no stage form; the refusal names the statement (file:line:col)
// and says why (docs/lifting.md lists the rules).
#pragma once

#include "ir/ir.h"
#include "lift/stage.h"

namespace lg::lift {

/// Most axes a stage indexes (kernels carry one index variable per axis).
inline constexpr size_t kMaxRank = 6;
/// Largest head_dim the attention stage takes (one warp holds head_dim / 32 accumulators per lane).
inline constexpr int64_t kMaxHeadDim = 256;
/// Largest k the topk stage takes (each thread keeps the k best of its row).
inline constexpr int64_t kMaxTopK = 64;

/// Lifts `g` (nodes in topological order, T the only runtime symbol) into stages: views, Const
/// and Arange become inline; each other node becomes a stage of its kind (elementwise -> Map,
/// reductions -> Reduce, MatMul -> Gemm, Gather, StateWrite, Attention). A view that is itself a
/// graph output gets a Map stage that copies it.
/// Throws lg::Error "FILE:LINE:COL: cannot lift `NAME` (OP): REASON" at the first statement whose
/// node cannot be lifted: a runtime dim other than T, a reduction, contraction or slice over the
/// runtime dim T, rank above kMaxRank, float math on integers, a non-i32 gather index, an
/// attention whose shapes the attention stage cannot take, or a read of a state version after
/// that state was overwritten in the same step; topk along another axis than the last or with k
/// above kMaxTopK; expert matmuls whose weights are not params.
StagedProgram lift(const ir::Graph& g);

}  // namespace lg::lift
