// The value type of the CPU reference executor: a strided view of a shared, typed buffer.
// Views (reshape of a contiguous value, permute, slice) share the buffer instead of copying, so
// `head.T` or `kcache[l]` cost nothing; the buffer's use count tells the executor when a state
// can be updated in place.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "support/dtype.h"

namespace lg::ir::cpu {

/// std::allocator that leaves new elements uninitialised: results that every element of is
/// written (a GEMM output, the logits) are not zeroed first, which for prefill logits
/// ([T, 151936] fp32) costs as much as the GEMM.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-init: no zeroing for float/int
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using FloatBuffer = std::vector<float, UninitAllocator<float>>;
using IntBuffer = std::vector<int32_t, UninitAllocator<int32_t>>;

/// The executor computes every float dtype (bf16, f16, f32) in fp32 and stores i32 and bool
/// (as 0/1) in int32. Maps an IR dtype to that storage class: F32, I32 or Bool.
/// Throws lg::Error for dtypes the IR does not compute with (i64, u8).
DType exec_dtype(DType t);

/// Row-major strides (in elements) of a contiguous tensor of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
/// Product of the dims (1 for rank 0).
int64_t numel_of(const std::vector<int64_t>& shape);

/// A tensor: `dtype` is F32 (data in `f`) or I32/Bool (data in `i`); element (i0, i1, ...) is at
/// offset + sum(ik * strides[k]) of the buffer. Strides may be 0 (broadcast) but never negative.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::shared_ptr<FloatBuffer> f;
  std::shared_ptr<IntBuffer> i;

  /// A fresh contiguous tensor of zeros; `dtype` is mapped through exec_dtype.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A fresh contiguous tensor whose elements are unspecified: for results that write them all.
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  /// Takes ownership of row-major data; throws lg::Error if its size does not match the shape.
  static Tensor from_f32(std::vector<int64_t> shape, std::vector<float> data);
  static Tensor from_i32(std::vector<int64_t> shape, std::vector<int32_t> data);

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return numel_of(shape); }
  bool is_float() const { return dtype == DType::F32; }
  /// Row-major with no gaps (its elements are data()[0 .. numel()-1]).
  bool is_contiguous() const;
  /// This tensor if contiguous (sharing the buffer), else a contiguous copy.
  Tensor contiguous() const;
  /// A contiguous copy that shares nothing with this one.
  Tensor clone() const;
  /// How many tensors share this one's buffer (1: this is the only one).
  long use_count() const { return is_float() ? f.use_count() : i.use_count(); }

  const float* fdata() const { return f->data() + offset; }
  float* fdata() { return f->data() + offset; }
  const int32_t* idata() const { return i->data() + offset; }
  int32_t* idata() { return i->data() + offset; }

  /// Elements in row-major order as floats / ints (ints converted exactly when |v| < 2^24).
  std::vector<float> to_f32() const;
  std::vector<int32_t> to_i32() const;
};

/// Calls fn(offsets) for every element of `shape` in row-major order, where offsets[k] is the
/// element's position in operand k (laid out by strides[k], starting at base[k]). The innermost
/// dim runs as a plain loop, so the cost per element is an add per operand.
template <size_t N, class Fn>
void for_each_offset(const std::vector<int64_t>& shape,
                     const std::array<const std::vector<int64_t>*, N>& strides,
                     const std::array<int64_t, N>& base, Fn&& fn) {
  const size_t rank = shape.size();
  if (numel_of(shape) == 0) return;
  if (rank == 0) {
    fn(base);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off = base;
  const int64_t inner = shape[rank - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = (*strides[k])[rank - 1];
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t j = 0; j < inner; ++j) {
      fn(o);
      for (size_t k = 0; k < N; ++k) o[k] += inner_stride[k];
    }
    // Advance the outer multi-index like an odometer.
    size_t d = rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += (*strides[k])[d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= (*strides[k])[d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace lg::ir::cpu
