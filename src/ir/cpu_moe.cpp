#include "ir/cpu_moe.h"

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "ir/cpu_ops.h"
#include "support/error.h"

namespace lg::ir::cpu {

namespace {

/// `a` is x before b in the descending order topk returns: larger first, NaN largest, ties by index.
bool before(float a, int64_t ia, float b, int64_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return na;
  if (!na && a != b) return a > b;
  return ia < ib;
}

void check_index(int32_t e, int64_t E, const char* what) {
  if (e < 0 || e >= E)
    throw Error(std::string(what) + ": expert index " + std::to_string(e) + " outside the " + std::to_string(E) +
                " experts");
}

}  // namespace

Tensor topk(const Tensor& x0, int64_t k, int32_t axis0, bool indices) {
  if (x0.dtype == DType::Bool) throw Error("topk: needs a numeric tensor");
  const auto rank = static_cast<int32_t>(x0.rank());
  const int32_t axis = axis0 < 0 ? axis0 + rank : axis0;
  if (axis < 0 || axis >= rank) throw Error("topk: axis " + std::to_string(axis0) + " out of range");
  const int64_t n = x0.shape[static_cast<size_t>(axis)];
  if (k < 1 || k > n) throw Error("topk: k = " + std::to_string(k) + " of an axis of " + std::to_string(n));
  // Move the axis last: rows of n contiguous elements.
  std::vector<int32_t> perm;
  for (int32_t a = 0; a < rank; ++a)
    if (a != axis) perm.push_back(a);
  perm.push_back(axis);
  const Tensor x = permute(x0, perm).contiguous();
  const std::vector<float> v = x.to_f32();
  const int64_t rows = n ? static_cast<int64_t>(v.size()) / n : 0;
  std::vector<int64_t> oshape = x.shape;
  oshape.back() = k;
  Tensor out = Tensor::empty(indices ? DType::I32 : x0.dtype, oshape);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v.data() + r * n;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return before(row[a], a, row[b], b); });
    for (int64_t j = 0; j < k; ++j) {
      const auto o = static_cast<size_t>(r * k + j), at = static_cast<size_t>(order[static_cast<size_t>(j)]);
      if (indices) out.i->data()[o] = static_cast<int32_t>(at);
      else if (out.is_float()) out.f->data()[o] = row[at];
      else out.i->data()[o] = static_cast<int32_t>(row[at]);
    }
  }
  // And the axis back where it was.
  std::vector<int32_t> back(static_cast<size_t>(rank));
  for (int32_t a = 0; a < rank; ++a) back[static_cast<size_t>(perm[static_cast<size_t>(a)])] = a;
  return permute(out, back).contiguous();
}

Tensor moe_gate_up(const Tensor& x0, const Tensor& idx0, const Tensor& wg0, const Tensor& wu0) {
  if (x0.rank() != 2 || idx0.rank() != 2 || wg0.rank() != 3 || wu0.shape != wg0.shape || idx0.is_float() ||
      idx0.shape[0] != x0.shape[0] || wg0.shape[2] != x0.shape[1])
    throw Error("moe_gate_up: expects x[T, D], idx i32[T, K], wg/wu[E, F, D]; found x " + shape_str(x0.shape) +
                ", idx " + shape_str(idx0.shape) + ", wg " + shape_str(wg0.shape) + ", wu " + shape_str(wu0.shape));
  const Tensor x = x0.contiguous(), wg = wg0.contiguous(), wu = wu0.contiguous();
  const std::vector<int32_t> idx = idx0.to_i32();
  const int64_t T = x.shape[0], D = x.shape[1], K = idx0.shape[1], E = wg.shape[0], F = wg.shape[1];
  Tensor out = Tensor::empty(DType::F32, {T, K, F});
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x.fdata() + t * D;
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = idx[static_cast<size_t>(t * K + k)];
      check_index(e, E, "moe_gate_up");
      for (int64_t f = 0; f < F; ++f) {
        const float* g = wg.fdata() + (e * F + f) * D;
        const float* u = wu.fdata() + (e * F + f) * D;
        double gs = 0, us = 0;
        for (int64_t d = 0; d < D; ++d) {
          gs += static_cast<double>(g[d]) * xr[d];
          us += static_cast<double>(u[d]) * xr[d];
        }
        const double silu = gs / (1.0 + std::exp(-gs));
        out.f->data()[(t * K + k) * F + f] = static_cast<float>(silu * us);
      }
    }
  }
  return out;
}

Tensor moe_down(const Tensor& act0, const Tensor& idx0, const Tensor& w0, const Tensor& wd0) {
  if (act0.rank() != 3 || idx0.rank() != 2 || wd0.rank() != 3 || idx0.is_float() || w0.shape != idx0.shape ||
      act0.shape[0] != idx0.shape[0] || act0.shape[1] != idx0.shape[1] || wd0.shape[2] != act0.shape[2])
    throw Error("moe_down: expects act[T, K, F], idx i32[T, K], w[T, K], wd[E, D, F]; found act " +
                shape_str(act0.shape) + ", idx " + shape_str(idx0.shape) + ", w " + shape_str(w0.shape) + ", wd " +
                shape_str(wd0.shape));
  const Tensor act = act0.contiguous(), wd = wd0.contiguous();
  const std::vector<int32_t> idx = idx0.to_i32();
  const std::vector<float> w = w0.to_f32();
  const int64_t T = act.shape[0], K = act.shape[1], F = act.shape[2], E = wd.shape[0], D = wd.shape[1];
  Tensor out = Tensor::empty(DType::F32, {T, D});
  std::vector<double> acc(static_cast<size_t>(D));
  for (int64_t t = 0; t < T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = idx[static_cast<size_t>(t * K + k)];
      check_index(e, E, "moe_down");
      const float* a = act.fdata() + (t * K + k) * F;
      const double wk = w[static_cast<size_t>(t * K + k)];
      for (int64_t d = 0; d < D; ++d) {
        const float* row = wd.fdata() + (e * D + d) * F;
        double s = 0;
        for (int64_t f = 0; f < F; ++f) s += static_cast<double>(row[f]) * a[f];
        acc[static_cast<size_t>(d)] += wk * s;
      }
    }
    for (int64_t d = 0; d < D; ++d) out.f->data()[t * D + d] = static_cast<float>(acc[static_cast<size_t>(d)]);
  }
  return out;
}

}  // namespace lg::ir::cpu
