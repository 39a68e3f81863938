#include "ir/cpu_tensor.h"

#include <algorithm>
#include <array>
#include <string>

#include "support/error.h"

namespace lg::ir::cpu {

DType exec_dtype(DType t) {
  switch (t) {
    case DType::BF16:
    case DType::F16:
    case DType::F32: return DType::F32;
    case DType::I32: return DType::I32;
    case DType::Bool: return DType::Bool;
    case DType::I64:
    case DType::U8: break;
  }
  throw Error("the CPU executor does not compute with dtype " + std::string(dtype_name(t)));
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = exec_dtype(dtype);
  t.strides = contiguous_strides(shape);
  const auto n = static_cast<size_t>(numel_of(shape));
  t.shape = std::move(shape);
  if (t.is_float())
    t.f = std::make_shared<FloatBuffer>(n);
  else
    t.i = std::make_shared<IntBuffer>(n);
  return t;
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.is_float())
    std::fill(t.f->begin(), t.f->end(), 0.0f);
  else
    std::fill(t.i->begin(), t.i->end(), 0);
  return t;
}

Tensor Tensor::from_f32(std::vector<int64_t> shape, std::vector<float> data) {
  if (static_cast<int64_t>(data.size()) != numel_of(shape))
    throw Error("tensor data has " + std::to_string(data.size()) + " elements, its shape needs " +
                std::to_string(numel_of(shape)));
  Tensor t;
  t.dtype = DType::F32;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  t.f = std::make_shared<FloatBuffer>(data.begin(), data.end());
  return t;
}

Tensor Tensor::from_i32(std::vector<int64_t> shape, std::vector<int32_t> data) {
  if (static_cast<int64_t>(data.size()) != numel_of(shape))
    throw Error("tensor data has " + std::to_string(data.size()) + " elements, its shape needs " +
                std::to_string(numel_of(shape)));
  Tensor t;
  t.dtype = DType::I32;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  t.i = std::make_shared<IntBuffer>(data.begin(), data.end());
  return t;
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && strides[k] != expect) return false;
    expect *= shape[k];
  }
  return true;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = zeros(dtype, shape);
  std::array<const std::vector<int64_t>*, 2> st{&strides, &out.strides};
  if (is_float()) {
    const float* src = f->data();
    float* dst = out.f->data();
    for_each_offset<2>(shape, st, {offset, 0}, [&](const std::array<int64_t, 2>& o) { dst[o[1]] = src[o[0]]; });
  } else {
    const int32_t* src = i->data();
    int32_t* dst = out.i->data();
    for_each_offset<2>(shape, st, {offset, 0}, [&](const std::array<int64_t, 2>& o) { dst[o[1]] = src[o[0]]; });
  }
  return out;
}

std::vector<float> Tensor::to_f32() const {
  Tensor c = contiguous();
  std::vector<float> out(static_cast<size_t>(numel()));
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = c.is_float() ? c.fdata()[k] : static_cast<float>(c.idata()[k]);
  return out;
}

std::vector<int32_t> Tensor::to_i32() const {
  Tensor c = contiguous();
  std::vector<int32_t> out(static_cast<size_t>(numel()));
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = c.is_float() ? static_cast<int32_t>(c.fdata()[k]) : c.idata()[k];
  return out;
}

}  // namespace lg::ir::cpu
