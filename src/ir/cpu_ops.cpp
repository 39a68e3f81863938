#include "ir/cpu_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "support/error.h"

namespace lg::ir::cpu {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + std::to_string(s[k]);
  return out + "]";
}

namespace {

/// Strides that read `t` as if it had `shape` (t's shape right-aligned in it; stretched dims
/// get stride 0).
std::vector<int64_t> broadcast_strides(const Tensor& t, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  const size_t pad = shape.size() - t.shape.size();
  for (size_t k = 0; k < t.shape.size(); ++k)
    s[pad + k] = (t.shape[k] == 1 && shape[pad + k] != 1) ? 0 : t.strides[k];
  return s;
}

Tensor as_float(const Tensor& t) {
  if (t.is_float()) return t;
  return unary(Op::Cast, t, DType::F32);
}

/// A float stored into i32: truncation toward zero, as torch. NaN gives 0 and values past the i32
/// range saturate, as CUDA's float-to-int conversion does (the plain C++ cast is undefined there).
int32_t to_int(float v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (v <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

/// Stores a computed value into the result buffer of class `out` (F32, I32 or Bool).
struct Store {
  Tensor t;
  explicit Store(DType out, const std::vector<int64_t>& shape) : t(Tensor::empty(out, shape)) {}
  void f(int64_t k, float v) {
    if (t.is_float()) t.f->data()[k] = v;
    else if (t.dtype == DType::Bool) t.i->data()[k] = v != 0.0f;
    else t.i->data()[k] = to_int(v);
  }
  void i(int64_t k, int64_t v) {
    if (t.is_float()) t.f->data()[k] = static_cast<float>(v);
    else if (t.dtype == DType::Bool) t.i->data()[k] = v != 0;
    else t.i->data()[k] = static_cast<int32_t>(v);
  }
};

/// A 2-D matrix view for BLAS: data, leading dimension, and whether it is stored transposed.
struct Mat {
  const float* p;
  int64_t ld;
  bool trans;
  Tensor keep;  // owns a copy when the view was not BLAS-compatible
};

Mat blas_view(const Tensor& t, int64_t off, int64_t rs, int64_t cs, int64_t rows, int64_t cols) {
  if (cs == 1 && (rows == 1 || rs >= cols)) return {t.f->data() + off, std::max<int64_t>(rs, cols), false, {}};
  if (rs == 1 && (cols == 1 || cs >= rows)) return {t.f->data() + off, std::max<int64_t>(cs, rows), true, {}};
  // Neither row- nor column-major: copy this one matrix.
  Tensor view = t;
  view.shape = {rows, cols};
  view.strides = {rs, cs};
  view.offset = off;
  Tensor c = view.clone();
  return {c.f->data(), cols, false, c};
}

/// C[M, N] = A[M, K] @ B[K, N] for BLAS-compatible views; C contiguous with leading dim N.
void gemm(const Mat& a, const Mat& b, float* c, int64_t m, int64_t n, int64_t k) {
  if (m == 1 && !a.trans) {
    // GEMV: decode's matmuls (the LM head above all) have one row; sgemv reads B once.
    if (b.trans)  // B = W^T with W[N, K] row-major: c = W a
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), 1.0f, b.p,
                  static_cast<int>(b.ld), a.p, 1, 0.0f, c, 1);
    else  // B[K, N] row-major: c = B^T a
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(k), static_cast<int>(n), 1.0f, b.p,
                  static_cast<int>(b.ld), a.p, 1, 0.0f, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, a.trans ? CblasTrans : CblasNoTrans, b.trans ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a.p, static_cast<int>(a.ld),
              b.p, static_cast<int>(b.ld), 0.0f, c, static_cast<int>(n));
}

int32_t norm_axis(int32_t axis, int64_t rank, const char* what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Error(std::string(what) + " axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int32_t>(a);
}

/// Copies src into dst (same shape; dst a view of a buffer this call may write).
void copy_into(Tensor& dst, const Tensor& src) {
  std::array<const std::vector<int64_t>*, 2> st{&dst.strides, &src.strides};
  if (dst.is_float()) {
    const Tensor s = as_float(src);
    float* d = dst.f->data();
    const float* p = s.f->data();
    for_each_offset<2>(dst.shape, {&dst.strides, &s.strides}, {dst.offset, s.offset},
                       [&](const std::array<int64_t, 2>& o) { d[o[0]] = p[o[1]]; });
  } else {
    if (src.is_float()) throw Error("cannot write a float value into an integer tensor");
    int32_t* d = dst.i->data();
    const int32_t* p = src.i->data();
    for_each_offset<2>(dst.shape, st, {dst.offset, src.offset}, [&](const std::array<int64_t, 2>& o) { d[o[0]] = p[o[1]]; });
  }
}

}  // namespace

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + a.size() >= r ? a[k + a.size() - r] : 1;
    const int64_t db = k + b.size() >= r ? b[k + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      throw Error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

Tensor unary(Op op, const Tensor& x, DType out) {
  // Every float dtype is fp32 here, so a cast between them (bf16 weight -> f32, the front end
  // writes one per use) is the identity: share the buffer instead of copying the weight.
  if (op == Op::Cast && exec_dtype(out) == x.dtype) return x;
  Store st(exec_dtype(out), x.shape);
  const std::vector<int64_t> cs = contiguous_strides(x.shape);
  std::array<const std::vector<int64_t>*, 2> strides{&x.strides, &cs};
  if (op == Op::Cast) {
    if (x.is_float()) {
      const float* p = x.f->data();
      for_each_offset<2>(x.shape, strides, {x.offset, 0}, [&](const std::array<int64_t, 2>& o) { st.f(o[1], p[o[0]]); });
    } else {
      const int32_t* p = x.i->data();
      for_each_offset<2>(x.shape, strides, {x.offset, 0}, [&](const std::array<int64_t, 2>& o) { st.i(o[1], p[o[0]]); });
    }
    return st.t;
  }
  if (!x.is_float() && !is_float_only(op)) {  // neg, abs of an integer: integer arithmetic
    const int32_t* p = x.i->data();
    for_each_offset<2>(x.shape, strides, {x.offset, 0},
                       [&](const std::array<int64_t, 2>& o) { st.i(o[1], host_eval_int(op, p[o[0]])); });
    return st.t;
  }
  const Tensor xf = as_float(x);
  const float* p = xf.f->data();
  std::array<const std::vector<int64_t>*, 2> sf{&xf.strides, &cs};
  with_host_unary(op, [&](auto fn) {
    for_each_offset<2>(x.shape, sf, {xf.offset, 0}, [&](const std::array<int64_t, 2>& o) { st.f(o[1], fn(p[o[0]])); });
  });
  return st.t;
}

Tensor binary(Op op, const Tensor& a, const Tensor& b, DType out) {
  const std::vector<int64_t> shape = broadcast_shapes(a.shape, b.shape);
  const DType cls = op_info(op).result == ResultDType::Bool ? DType::Bool : exec_dtype(out);
  Store st(cls, shape);
  const std::vector<int64_t> cs = contiguous_strides(shape);
  if (a.is_float() || b.is_float()) {
    const Tensor af = as_float(a), bf = as_float(b);
    const std::vector<int64_t> sa = broadcast_strides(af, shape), sb = broadcast_strides(bf, shape);
    const float* pa = af.f->data();
    const float* pb = bf.f->data();
    float* dst = st.t.is_float() ? st.t.f->data() : nullptr;
    auto run = [&](auto fn) {
      for_each_offset<3>(shape, {&sa, &sb, &cs}, {af.offset, bf.offset, 0}, [&](const std::array<int64_t, 3>& o) {
        if (dst) dst[o[2]] = fn(pa[o[0]], pb[o[1]]);
        else st.f(o[2], fn(pa[o[0]], pb[o[1]]));
      });
    };
    with_host_binary(op, run);  // a loop per op, its arithmetic inlined
    return st.t;
  }
  const std::vector<int64_t> sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
  const int32_t* pa = a.i->data();
  const int32_t* pb = b.i->data();
  for_each_offset<3>(shape, {&sa, &sb, &cs}, {a.offset, b.offset, 0}, [&](const std::array<int64_t, 3>& o) {
    st.i(o[2], host_eval_int(op, pa[o[0]], pb[o[1]]));
  });
  return st.t;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, DType out) {
  if (cond.is_float()) throw Error("where: the condition must be bool");
  const std::vector<int64_t> shape = broadcast_shapes(cond.shape, broadcast_shapes(a.shape, b.shape));
  Store st(exec_dtype(out), shape);
  const std::vector<int64_t> cs = contiguous_strides(shape);
  const std::vector<int64_t> sc = broadcast_strides(cond, shape);
  const int32_t* pc = cond.i->data();
  if (a.is_float() || b.is_float() || st.t.is_float()) {
    const Tensor af = as_float(a), bf = as_float(b);
    const std::vector<int64_t> sa = broadcast_strides(af, shape), sb = broadcast_strides(bf, shape);
    const float* pa = af.f->data();
    const float* pb = bf.f->data();
    for_each_offset<4>(shape, {&sc, &sa, &sb, &cs}, {cond.offset, af.offset, bf.offset, 0},
                       [&](const std::array<int64_t, 4>& o) { st.f(o[3], pc[o[0]] ? pa[o[1]] : pb[o[2]]); });
    return st.t;
  }
  const std::vector<int64_t> sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
  const int32_t* pa = a.i->data();
  const int32_t* pb = b.i->data();
  for_each_offset<4>(shape, {&sc, &sa, &sb, &cs}, {cond.offset, a.offset, b.offset, 0},
                     [&](const std::array<int64_t, 4>& o) { st.i(o[3], pc[o[0]] ? pa[o[1]] : pb[o[2]]); });
  return st.t;
}

Tensor reduce(Op op, const Tensor& x, int32_t axis, bool keepdim) {
  if (op != Op::ReduceSum && op != Op::ReduceMax) throw Error(std::string("not a reduction: ") + op_name(op));
  const int32_t ax = norm_axis(axis, x.rank(), "reduction");
  const Tensor c = x.contiguous();
  int64_t outer = 1, inner = 1;
  for (int32_t k = 0; k < ax; ++k) outer *= x.shape[static_cast<size_t>(k)];
  for (int64_t k = ax + 1; k < x.rank(); ++k) inner *= x.shape[static_cast<size_t>(k)];
  const int64_t n = x.shape[static_cast<size_t>(ax)];
  if (n == 0 && op == Op::ReduceMax) throw Error("reduce_max over an empty axis");
  std::vector<int64_t> shape = x.shape;
  if (keepdim) shape[static_cast<size_t>(ax)] = 1;
  else shape.erase(shape.begin() + ax);
  Tensor out = Tensor::empty(x.dtype == DType::Bool && op == Op::ReduceSum ? DType::I32 : x.dtype, shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * n * inner + in;
      if (c.is_float()) {
        const float* p = c.fdata();
        if (op == Op::ReduceSum) {
          double s = 0;
          for (int64_t j = 0; j < n; ++j) s += p[base + j * inner];
          out.f->data()[o * inner + in] = static_cast<float>(s);
        } else {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < n; ++j) m = std::max(m, p[base + j * inner]);
          out.f->data()[o * inner + in] = m;
        }
      } else {
        const int32_t* p = c.idata();
        int64_t s = op == Op::ReduceSum ? 0 : std::numeric_limits<int32_t>::min();
        for (int64_t j = 0; j < n; ++j) s = op == Op::ReduceSum ? s + p[base + j * inner] : std::max<int64_t>(s, p[base + j * inner]);
        out.i->data()[o * inner + in] = static_cast<int32_t>(s);
      }
    }
  return out;
}

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  if (a0.rank() < 2 || b0.rank() < 2)
    throw Error("matmul needs operands of rank >= 2, got " + shape_str(a0.shape) + " @ " + shape_str(b0.shape));
  const Tensor a = as_float(a0), b = as_float(b0);
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k)
    throw Error("matmul contraction dims differ: " + shape_str(a.shape) + " @ " + shape_str(b.shape));
  const std::vector<int64_t> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  const std::vector<int64_t> batch = broadcast_shapes(batch_a, batch_b);
  std::vector<int64_t> shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  if (k == 0 || numel_of(shape) == 0) return Tensor::zeros(DType::F32, shape);  // empty sums
  Tensor out = Tensor::empty(DType::F32, shape);
  float* c = out.f->data();
  // Shared weight (b has no batch dims): fold a's batch into M when a's rows are evenly spaced.
  const Tensor ac = a.contiguous();
  if (batch_b.empty() || numel_of(batch_b) == 1) {
    const int64_t rows = numel_of(batch) * m;
    const Mat ma = blas_view(ac, ac.offset, k, 1, rows, k);
    const Mat mb = blas_view(b, b.offset + 0, b.strides[rb - 2], b.strides[rb - 1], k, n);
    if (numel_of(batch_a) == numel_of(batch)) {
      gemm(ma, mb, c, rows, n, k);
      return out;
    }
  }
  // General batched case: one GEMM per broadcast batch index.
  Tensor av = a, bv = b;
  std::vector<int64_t> sa = broadcast_strides(Tensor{a.dtype, batch_a, std::vector<int64_t>(a.strides.begin(), a.strides.end() - 2), 0, {}, {}}, batch);
  std::vector<int64_t> sb = broadcast_strides(Tensor{b.dtype, batch_b, std::vector<int64_t>(b.strides.begin(), b.strides.end() - 2), 0, {}, {}}, batch);
  const std::vector<int64_t> sc = contiguous_strides(batch);
  for_each_offset<3>(batch, {&sa, &sb, &sc}, {a.offset, b.offset, 0}, [&](const std::array<int64_t, 3>& o) {
    const Mat ma = blas_view(av, o[0], a.strides[ra - 2], a.strides[ra - 1], m, k);
    const Mat mb = blas_view(bv, o[1], b.strides[rb - 2], b.strides[rb - 1], k, n);
    gemm(ma, mb, c + o[2] * m * n, m, n, k);
  });
  return out;
}

Tensor gather(const Tensor& table0, const Tensor& idx0) {
  if (idx0.is_float()) throw Error("gather: indices must be i32");
  if (table0.rank() < 1) throw Error("gather: the table must have rank >= 1");
  const Tensor table = table0.contiguous();
  const std::vector<int32_t> idx = idx0.to_i32();
  const int64_t rows = table.shape[0];
  const int64_t row = rows ? table.numel() / rows : 0;
  std::vector<int64_t> shape = idx0.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  Tensor out = Tensor::empty(table.dtype, shape);
  for (size_t j = 0; j < idx.size(); ++j) {
    if (idx[j] < 0 || idx[j] >= rows)
      throw Error("gather: index " + std::to_string(idx[j]) + " outside the table's " + std::to_string(rows) + " rows");
    const int64_t src = idx[j] * row, dst = static_cast<int64_t>(j) * row;
    if (table.is_float()) std::copy_n(table.fdata() + src, row, out.f->data() + dst);
    else std::copy_n(table.idata() + src, row, out.i->data() + dst);
  }
  return out;
}

Tensor arange(int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<int32_t>(k);
  return Tensor::from_i32({n}, std::move(v));
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  if (numel_of(shape) != x.numel())
    throw Error("reshape from " + shape_str(x.shape) + " to " + shape_str(shape) + " changes the element count");
  Tensor out = x.contiguous();
  out.shape = shape;
  out.strides = contiguous_strides(shape);
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int32_t>& perm) {
  if (static_cast<int64_t>(perm.size()) != x.rank()) throw Error("permute: perm has the wrong length for " + shape_str(x.shape));
  std::vector<bool> seen(perm.size(), false);
  Tensor out = x;
  for (size_t k = 0; k < perm.size(); ++k) {
    const int32_t p = perm[k];
    if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)]) throw Error("permute: perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out.shape[k] = x.shape[static_cast<size_t>(p)];
    out.strides[k] = x.strides[static_cast<size_t>(p)];
  }
  return out;
}

Tensor slice(const Tensor& x, int32_t axis, int64_t start, int64_t stop, int64_t step) {
  const auto ax = static_cast<size_t>(norm_axis(axis, x.rank(), "slice"));
  if (step < 1 || start < 0 || start > stop || stop > x.shape[ax])
    throw Error("slice " + std::to_string(start) + ":" + std::to_string(stop) + ":" + std::to_string(step) +
                " out of range for a dim of " + std::to_string(x.shape[ax]));
  Tensor out = x;
  out.offset += start * x.strides[ax];
  out.shape[ax] = ir::slice_length(start, stop, step);
  // A step past the dim leaves one element, whose stride is never used: x's keeps the product
  // from overflowing.
  out.strides[ax] = out.shape[ax] > 1 ? x.strides[ax] * step : x.strides[ax];
  return out;
}

Tensor concat(std::span<const Tensor> xs, int32_t axis) {
  if (xs.empty()) throw Error("concat of nothing");
  const auto ax = static_cast<size_t>(norm_axis(axis, xs[0].rank(), "concat"));
  std::vector<int64_t> shape = xs[0].shape;
  shape[ax] = 0;
  for (const Tensor& t : xs) {
    bool ok = t.rank() == xs[0].rank() && t.is_float() == xs[0].is_float();
    for (size_t k = 0; ok && k < shape.size(); ++k) ok = k == ax || t.shape[k] == xs[0].shape[k];
    if (!ok) throw Error("concat: " + shape_str(t.shape) + " does not match " + shape_str(xs[0].shape));
    shape[ax] += t.shape[ax];
  }
  Tensor out = Tensor::empty(xs[0].dtype, shape);
  int64_t at = 0;
  for (const Tensor& t : xs) {
    Tensor dst = slice(out, static_cast<int32_t>(ax), at, at + t.shape[ax], 1);
    copy_into(dst, t);
    at += t.shape[ax];
  }
  return out;
}

Paging::Paging(const Tensor& seq0, const Tensor& block_table, int64_t bs)
    : seq(seq0.to_i32()), table(block_table.to_i32()), blocks_per_seq(block_table.shape.at(1)), block_size(bs) {
  if (block_size < 1) throw Error("paging: block size " + std::to_string(block_size));
}

int64_t Paging::row(size_t t, int64_t p, int64_t rows) const {
  const int64_t b = seq.at(t), sequences = static_cast<int64_t>(table.size()) / std::max<int64_t>(blocks_per_seq, 1);
  if (b < 0 || b >= sequences)
    throw Error("token " + std::to_string(t) + " names sequence " + std::to_string(b) + " of a block table of " +
                std::to_string(sequences));
  if (p < 0 || p / block_size >= blocks_per_seq)
    throw Error("token " + std::to_string(t) + ": position " + std::to_string(p) + " is past the block table's " +
                std::to_string(blocks_per_seq) + " blocks of " + std::to_string(block_size));
  const int64_t block = table[static_cast<size_t>(b * blocks_per_seq + p / block_size)];
  if (block < 0 || (block + 1) * block_size > rows)
    throw Error("token " + std::to_string(t) + ": block " + std::to_string(block) + " (position " + std::to_string(p) +
                ") is outside the pool of " + std::to_string(rows / block_size) + " blocks");
  return block * block_size + p % block_size;
}

Tensor state_write(Tensor state, const Tensor& value, const Tensor& pos0, const std::vector<int64_t>& fixed,
                   int32_t axis, const Paging* paging) {
  const size_t nf = fixed.size();
  if (static_cast<int64_t>(nf) > state.rank()) throw Error("state_write: more fixed indices than state axes");
  const size_t rest = state.shape.size() - nf;
  if (value.rank() != static_cast<int64_t>(rest))
    throw Error("state_write: value " + shape_str(value.shape) + " does not have the state's remaining " +
                std::to_string(rest) + " axes");
  const auto ax = static_cast<size_t>(norm_axis(axis, static_cast<int64_t>(rest), "state_write"));
  const std::vector<int32_t> pos = pos0.to_i32();
  if (value.shape[ax] != static_cast<int64_t>(pos.size()))
    throw Error("state_write: value " + shape_str(value.shape) + " has " + std::to_string(value.shape[ax]) +
                " rows on axis " + std::to_string(ax) + " but there are " + std::to_string(pos.size()) + " positions");
  for (size_t k = 0; k < rest; ++k)
    if (k != ax && value.shape[k] != state.shape[nf + k])
      throw Error("state_write: value " + shape_str(value.shape) + " does not fit state " + shape_str(state.shape));
  if (state.is_float() != value.is_float()) throw Error("state_write: value and state dtypes differ");
  // Copy-on-write: an older version or a view still reads this buffer.
  if (state.use_count() > 1) state = state.clone();
  Tensor region = state;  // the state with the fixed axes dropped
  for (size_t k = 0; k < nf; ++k) {
    if (fixed[k] < 0 || fixed[k] >= state.shape[k])
      throw Error("state_write: fixed index " + std::to_string(fixed[k]) + " outside the state's dim of " +
                  std::to_string(state.shape[k]));
    region.offset += fixed[k] * state.strides[k];
  }
  region.shape.erase(region.shape.begin(), region.shape.begin() + static_cast<int64_t>(nf));
  region.strides.erase(region.strides.begin(), region.strides.begin() + static_cast<int64_t>(nf));
  const int64_t rows = region.shape[ax];
  for (size_t t = 0; t < pos.size(); ++t) {
    const int64_t row = paging ? paging->row(t, pos[t], rows) : pos[t];
    if (row < 0 || row >= rows)
      throw Error("state_write: position " + std::to_string(pos[t]) + " outside the state's " + std::to_string(rows) + " rows");
    Tensor dst = slice(region, static_cast<int32_t>(ax), row, row + 1, 1);
    Tensor src = slice(value, static_cast<int32_t>(ax), static_cast<int64_t>(t), static_cast<int64_t>(t) + 1, 1);
    copy_into(dst, src);
  }
  return state;
}

namespace {

/// Causal GQA attention of `T` queries (q rows H*Dh apart) over the first `n` cache rows of each
/// KV head (k/v rows Dh apart, heads `head_stride` apart); query t sees rows lo(t) ..= pos[t], where
/// lo(t) = max(0, pos[t] - window + 1) with a window (0: lo = 0). Scores are scale * q.k, then
/// softcap * tanh(score / softcap) when softcap > 0. Writes out rows H*Dh apart. Only the rows some
/// query sees are multiplied (from the smallest lo(t)), so a window bounds the work too.
void attend(const float* q, int64_t T, int64_t H, int64_t Dh, const float* k, const float* v, int64_t head_stride,
            int64_t n, const std::vector<int32_t>& pos, double scale, int32_t gqa_group, int64_t window,
            double softcap, float* out) {
  auto first = [&](int64_t t) -> int64_t {
    return window > 0 ? std::max<int64_t>(0, pos[static_cast<size_t>(t)] - window + 1) : 0;
  };
  int64_t k0 = n;  // the first row any query sees
  for (int64_t t = 0; t < T; ++t) k0 = std::min(k0, first(t));
  const int64_t m = n - k0;  // rows multiplied
  std::vector<float> scores(static_cast<size_t>(T * m));
  const int ldq = static_cast<int>(H * Dh), ldk = static_cast<int>(Dh), ldp = static_cast<int>(m);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / gqa_group;
    const float* qh = q + h * Dh;
    const float* kg = k + g * head_stride + k0 * Dh;
    const float* vg = v + g * head_stride + k0 * Dh;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(T), static_cast<int>(m), static_cast<int>(Dh),
                static_cast<float>(scale), qh, ldq, kg, ldk, 0.0f, scores.data(), ldp);
    for (int64_t t = 0; t < T; ++t) {
      float* row = scores.data() + t * m;
      const int64_t lo = first(t) - k0, len = pos[static_cast<size_t>(t)] + 1 - k0;  // rows lo .. pos[t]
      if (softcap > 0)
        for (int64_t s = lo; s < len; ++s)
          row[s] = static_cast<float>(softcap * std::tanh(static_cast<double>(row[s]) / softcap));
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t s = lo; s < len; ++s) mx = std::max(mx, row[s]);
      double sum = 0;
      for (int64_t s = lo; s < len; ++s) sum += row[s] = std::exp(row[s] - mx);
      const auto inv = static_cast<float>(1.0 / sum);
      for (int64_t s = lo; s < len; ++s) row[s] *= inv;
      std::fill(row, row + lo, 0.0f);        // before the window: masked out
      std::fill(row + len, row + m, 0.0f);   // future positions: masked out
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(T), static_cast<int>(Dh), static_cast<int>(m),
                1.0f, scores.data(), ldp, vg, ldk, 0.0f, out + h * Dh, ldq);
  }
}

}  // namespace

Tensor attention(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& pos0, double scale,
                 int32_t gqa_group, const Paging* paging, int64_t window, double softcap) {
  if (q0.rank() != 3 || k0.rank() != 3 || v0.rank() != 3)
    throw Error("attention expects q[T,H,Dh], k[KV,S,Dh], v[KV,S,Dh]; got " + shape_str(q0.shape) + ", " +
                shape_str(k0.shape) + ", " + shape_str(v0.shape));
  const Tensor q = as_float(q0).contiguous(), k = as_float(k0).contiguous(), v = as_float(v0).contiguous();
  const std::vector<int32_t> pos = pos0.to_i32();
  const int64_t T = q.shape[0], H = q.shape[1], Dh = q.shape[2];
  const int64_t KV = k.shape[0], S = k.shape[1];
  if (k.shape != v.shape || k.shape[2] != Dh)
    throw Error("attention: k " + shape_str(k.shape) + " / v " + shape_str(v.shape) + " do not match q " + shape_str(q.shape));
  if (gqa_group < 1 || H != KV * gqa_group)
    throw Error("attention: " + std::to_string(H) + " query heads with " + std::to_string(KV) +
                " KV heads do not make groups of " + std::to_string(gqa_group));
  if (static_cast<int64_t>(pos.size()) != T)
    throw Error("attention: " + std::to_string(pos.size()) + " positions for " + std::to_string(T) + " queries");
  if (window < 0 || !(softcap >= 0))
    throw Error("attention: window " + std::to_string(window) + " and softcap " + std::to_string(softcap) + " must be >= 0");
  Tensor out = Tensor::empty(DType::F32, {T, H, Dh});
  if (!paging) {
    for (int32_t p : pos)
      if (p < 0 || p >= S) throw Error("attention: position " + std::to_string(p) + " outside the cache's " + std::to_string(S) + " rows");
    // Per query head: scores = scale * Q_h K_g^T over the rows any query of this step can see,
    // causal mask, softmax per row, out_h = P V_g. Two GEMMs per head keep prefill on BLAS.
    int64_t n = 0;  // cache rows visible to the latest query
    for (int32_t p : pos) n = std::max<int64_t>(n, p + 1);
    attend(q.fdata(), T, H, Dh, k.fdata(), v.fdata(), S * Dh, n, pos, scale, gqa_group, window, softcap, out.f->data());
    return out;
  }
  if (static_cast<int64_t>(paging->seq.size()) != T)
    throw Error("attention: " + std::to_string(paging->seq.size()) + " sequence ids for " + std::to_string(T) + " queries");
  // Each sequence of the step on its own: its queries, and its cache rows gathered from the pool
  // in position order, so a sequence computes exactly what it would alone.
  std::vector<char> done(static_cast<size_t>(T), 0);
  for (size_t t0 = 0; t0 < static_cast<size_t>(T); ++t0) {
    if (done[t0]) continue;
    std::vector<size_t> mine;
    for (size_t t = t0; t < static_cast<size_t>(T); ++t)
      if (paging->seq[t] == paging->seq[t0]) mine.push_back(t);
    int64_t n = 0;
    std::vector<int32_t> my_pos;
    for (size_t t : mine) {
      done[t] = 1;
      if (pos[t] < 0) throw Error("attention: token " + std::to_string(t) + " has position " + std::to_string(pos[t]));
      my_pos.push_back(pos[t]);
      n = std::max<int64_t>(n, pos[t] + 1);
    }
    std::vector<float> kn(static_cast<size_t>(KV * n * Dh)), vn(kn.size()), qs(mine.size() * static_cast<size_t>(H * Dh)),
        os(qs.size());
    for (int64_t p = 0; p < n; ++p) {
      const int64_t row = paging->row(mine[0], p, S);
      for (int64_t g = 0; g < KV; ++g) {
        std::copy_n(k.fdata() + (g * S + row) * Dh, Dh, kn.data() + (g * n + p) * Dh);
        std::copy_n(v.fdata() + (g * S + row) * Dh, Dh, vn.data() + (g * n + p) * Dh);
      }
    }
    for (size_t i = 0; i < mine.size(); ++i)
      std::copy_n(q.fdata() + static_cast<int64_t>(mine[i]) * H * Dh, H * Dh, qs.data() + static_cast<int64_t>(i) * H * Dh);
    attend(qs.data(), static_cast<int64_t>(mine.size()), H, Dh, kn.data(), vn.data(), n * Dh, n, my_pos, scale,
           gqa_group, window, softcap, os.data());
    for (size_t i = 0; i < mine.size(); ++i)
      std::copy_n(os.data() + static_cast<int64_t>(i) * H * Dh, H * Dh, out.f->data() + static_cast<int64_t>(mine[i]) * H * Dh);
  }
  return out;
}

}  // namespace lg::ir::cpu
