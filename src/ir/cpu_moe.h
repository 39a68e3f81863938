// The CPU reference of the routing and expert ops (ops.def: TopK, ArgTopK, MoeGateUp, MoeDown):
// what a mixture-of-experts layer means, as transformers' modeling_qwen3_moe.py computes it
// (softmax router, top-k, SwiGLU experts, routing-weighted sum). Conventions as cpu_ops.h: fp32
// math, strided inputs, fresh contiguous results, lg::Error for bad shapes or indices.
#pragma once

#include <cstdint>

#include "ir/cpu_tensor.h"

namespace lg::ir::cpu {

/// The k largest elements of x along `axis` (negative counts from the end), largest first, as
/// torch.topk(x, k, dim=axis) (sorted): values (x's dtype) if !indices, else their positions
/// along the axis (i32). Equal values keep the lower index first; NaN counts as the largest (as
/// torch). Throws lg::Error unless 1 <= k <= x.shape[axis].
Tensor topk(const Tensor& x, int64_t k, int32_t axis, bool indices);

/// The gate/up half of routed SwiGLU experts: x[T, D], idx i32[T, K], wg/wu[E, F, D] ->
/// f32[T, K, F] with out[t, k] = silu(wg[e] @ x[t]) * (wu[e] @ x[t]), e = idx[t, k]
/// (modeling_qwen3_moe.py: act_fn(gate_proj(x)) * up_proj(x)). Dot products accumulate in double.
/// Throws lg::Error for an index outside [0, E) or mismatched shapes.
Tensor moe_gate_up(const Tensor& x, const Tensor& idx, const Tensor& wg, const Tensor& wu);

/// The down half: act[T, K, F], idx i32[T, K], w[T, K], wd[E, D, F] -> f32[T, D] with
/// out[t] = sum_k w[t, k] * (wd[idx[t, k]] @ act[t, k]) (down_proj, times the routing weight,
/// index_add over the token's experts). Accumulates in double, slots in order.
Tensor moe_down(const Tensor& act, const Tensor& idx, const Tensor& w, const Tensor& wd);

}  // namespace lg::ir::cpu
