// The primitives of the CPU reference executor, one function per IR op family. They define what
// each op of ir.h means; the executor (cpu_executor.h) only dispatches nodes to them, and every
// one is unit-tested against a naive loop (tests/ir/cpu_ops_test.cpp).
//
// Conventions shared by all of them: float dtypes compute in fp32 (see exec_dtype); inputs may
// be strided views; results are fresh contiguous tensors unless the doc says "view". Bad shapes
// or indices throw lg::Error with a plain message; the executor prefixes the node and its span.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/cpu_tensor.h"
#include "ir/ir.h"

namespace lg::ir::cpu {

/// A shape as error messages print it: "[2,3,4]".
std::string shape_str(const std::vector<int64_t>& s);

/// Numpy broadcasting of two shapes (right-aligned; a dim of 1 stretches; equal rank, as ir.h
/// asks, is the common case). Throws lg::Error if a dim pair is neither equal nor has a 1.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// Unary elementwise op (Neg .. Sigmoid) or Cast to `out` (float -> int truncates toward zero as
/// torch does; anything -> bool is != 0; casts between float dtypes are the identity in fp32).
Tensor unary(Op op, const Tensor& x, DType out);

/// Binary elementwise op (Add .. Ne) with broadcasting. Floats compute in fp32; if both operands
/// are integer (i32/bool) the op is integer arithmetic (Div truncates; division by zero throws).
/// Comparisons return Bool; otherwise the result is converted to `out`.
Tensor binary(Op op, const Tensor& a, const Tensor& b, DType out);

/// where(cond, a, b) elementwise with broadcasting of all three; the result has dtype `out`.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, DType out);

/// ReduceSum / ReduceMax over `axis` (negative counts from the end). Float sums accumulate in
/// double so the reference does not depend on summation order.
Tensor reduce(Op op, const Tensor& x, int32_t axis, bool keepdim);

/// a[..., M, K] @ b[..., K, N] -> [..., M, N] (fp32, cblas_sgemm). b may be rank 2; batch dims
/// broadcast. A transposed view (e.g. `w.T` of a contiguous [N, K] weight) is used in place.
Tensor matmul(const Tensor& a, const Tensor& b);

/// Rows of `table` along axis 0 picked by `idx` (i32[I...]) -> [I..., table.shape[1:]].
/// Throws lg::Error for an index outside [0, table.shape[0]).
Tensor gather(const Tensor& table, const Tensor& idx);

/// i32[n]: 0 .. n-1.
Tensor arange(int64_t n);

/// Reshape to `shape` (same element count): a view when x is contiguous, else a copy.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
/// View whose axis i is x's axis perm[i]; throws if perm is not a permutation of 0..rank-1.
Tensor permute(const Tensor& x, const std::vector<int32_t>& perm);
/// View of elements start, start+step, ... < stop along `axis` (0 <= start <= stop <= dim, step >= 1).
Tensor slice(const Tensor& x, int32_t axis, int64_t start, int64_t stop, int64_t step);
/// Joins tensors of equal rank and dtype along `axis`; the other dims must agree.
Tensor concat(std::span<const Tensor> xs, int32_t axis);

/// The paging operands of a paged StateWrite or Attention (ir.h): position p of token t is row
/// table[seq[t], p / block_size] * block_size + p % block_size of the state's position axis.
struct Paging {
  std::vector<int32_t> seq;    ///< [T]
  std::vector<int32_t> table;  ///< [B, blocks_per_seq], row-major
  int64_t blocks_per_seq = 0;
  int64_t block_size = 0;
  /// From the seq and block_table operands.
  Paging(const Tensor& seq, const Tensor& block_table, int64_t block_size);
  /// The row of position `p` of token `t` in a pool of `rows` rows. Throws lg::Error naming the
  /// token for a sequence outside the table, a position past the table, or a block outside the pool.
  int64_t row(size_t t, int64_t p, int64_t rows) const;
};

/// The StateWrite op of ir.h: writes `value` into `state` at the leading indices `fixed` and at
/// rows pos[t] (paged: paging->row(t, pos[t])) of the remaining axis `axis`, and returns the new
/// version. `state` is taken by
/// value: when it is the only owner of a contiguous buffer the write happens in place (the KV
/// cache is never copied per step), else the buffer is copied first so older versions and views
/// stay intact. Throws lg::Error for a position outside the state or mismatched shapes.
Tensor state_write(Tensor state, const Tensor& value, const Tensor& pos,
                   const std::vector<int64_t>& fixed, int32_t axis, const Paging* paging = nullptr);

/// Causal attention over a KV cache with GQA: q[T, H, Dh], k/v[KV, S, Dh], pos i32[T].
/// out[t, h] = sum_{lo(t) <= s <= pos[t]} softmax_s(c(scale * q[t, h] . k[h / group, s])) v[h / group, s],
/// lo(t) = max(0, pos[t] - window + 1) with a sliding window (window > 0; else 0), c(x) = softcap *
/// tanh(x / softcap) with logit soft-capping (softcap > 0; else x): transformers' sliding-window
/// mask `kv_idx > q_idx - sliding_window` and Gemma 2's attn_logit_softcapping.
/// Requires H == KV * group and 0 <= pos[t] < S. Paged (`paging` given), the cache rows of
/// query t are paging->row(t, 0 ..= pos[t]): the earlier positions of its own sequence, and the
/// queries of each sequence are computed together exactly as that sequence alone. Scores and the
/// weighted sum are GEMMs (cblas_sgemm); the softmax subtracts the row max and sums in double.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos, double scale,
                 int32_t gqa_group, const Paging* paging = nullptr, int64_t window = 0, double softcap = 0);

}  // namespace lg::ir::cpu
