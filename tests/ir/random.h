// Fresh random inputs for the IR tests: a new seed every run (printed on failure through
// SCOPED_TRACE by the callers), so a kernel check never passes by the luck of one fixed draw.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ir/cpu_tensor.h"

namespace lg::ir::test {

inline std::mt19937& rng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

/// Uniform in [-1, 1).
inline cpu::Tensor random_f32(std::vector<int64_t> shape) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(cpu::numel_of(shape)));
  for (float& x : v) x = d(rng());
  return cpu::Tensor::from_f32(std::move(shape), std::move(v));
}

/// Uniform integers in [lo, hi].
inline cpu::Tensor random_i32(std::vector<int64_t> shape, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(cpu::numel_of(shape)));
  for (int32_t& x : v) x = d(rng());
  return cpu::Tensor::from_i32(std::move(shape), std::move(v));
}

/// Element at a multi-index, read through the tensor's strides (the naive way).
inline float at_f(const cpu::Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = t.offset;
  for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * t.strides[k];
  return t.is_float() ? (*t.f)[static_cast<size_t>(off)] : static_cast<float>((*t.i)[static_cast<size_t>(off)]);
}

/// Row-major multi-index of linear index `lin` in `shape`.
inline std::vector<int64_t> unravel(int64_t lin, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = lin % shape[k];
    lin /= shape[k];
  }
  return idx;
}

}  // namespace lg::ir::test
