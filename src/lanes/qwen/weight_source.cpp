#include "lanes/qwen/weight_source.h"

#include <cstring>
#include <numeric>

#include "lanes/qwen/kernels.h"
#include "model/checkpoint.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"
#include "runtime/cuda/pinned_upload.h"
#include "support/dtype.h"
#include "support/fnv1a.h"

namespace lg::qwen {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

size_t numel(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), size_t{1}, [](size_t a, int64_t b) { return a * static_cast<size_t>(b); });
}

const model::TensorInfo& checked_info(const model::Checkpoint& c, const std::string& name,
                                      const std::vector<int64_t>& shape) {
  const model::TensorInfo& info = c.info(name);  // throws with nearest names when absent
  if (info.shape != shape)
    throw Error(c.source().string() + ": tensor '" + name + "' has shape " + shape_text(info.shape) +
                ", the config implies " + shape_text(shape));
  if (!is_float(info.dtype))
    throw Error(c.source().string() + ": tensor '" + name + "' has dtype " + std::string(dtype_name(info.dtype)) +
                ", expected a float type");
  return info;
}

}  // namespace

CheckpointWeights::CheckpointWeights(const model::Checkpoint& ckpt) : ckpt_(ckpt) {}

CheckpointWeights::~CheckpointWeights() = default;

void CheckpointWeights::load_bf16(const std::string& name, const std::vector<int64_t>& shape, __nv_bfloat16* dst,
                                  cudaStream_t stream) {
  const model::TensorInfo& info = checked_info(ckpt_, name, shape);
  const auto bytes = ckpt_.bytes(name);
  if (info.dtype == DType::BF16) {
    if (!uploader_) uploader_ = std::make_unique<cuda::PinnedUploader>();
    uploader_->upload(dst, bytes.data(), bytes.size(), stream);  // the mapping is read when it returns
    return;
  }
  // f32 / f16: widen on the host (exact), round to bf16 on the device (round-to-nearest-even).
  std::vector<float> f = ckpt_.to_f32(name);
  cuda::DeviceBuffer tmp(f.size() * sizeof(float));
  tmp.upload(f.data(), f.size() * sizeof(float));
  launch_f32_to_bf16(tmp.as<float>(), f.size(), dst, stream);
  LG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CheckpointWeights::load_f32(const std::string& name, const std::vector<int64_t>& shape, float* dst,
                                 cudaStream_t stream) {
  checked_info(ckpt_, name, shape);
  std::vector<float> f = ckpt_.to_f32(name);
  LG_CUDA_CHECK(cudaMemcpyAsync(dst, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  LG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::string CheckpointWeights::describe() const { return "checkpoint " + ckpt_.source().string(); }

void RandomWeights::load_bf16(const std::string& name, const std::vector<int64_t>& shape, __nv_bfloat16* dst,
                              cudaStream_t stream) {
  cuda::fill_uniform_bf16(dst, numel(shape), seed_ ^ fnv1a64(name), 0.0346f, stream);
}

void RandomWeights::load_f32(const std::string& name, const std::vector<int64_t>& shape, float* dst,
                             cudaStream_t stream) {
  // Norm weights are 1 and biases 0 in a freshly initialised HF model.
  const bool is_norm = name.find("norm") != std::string::npos;
  std::vector<float> v(numel(shape), is_norm ? 1.f : 0.f);
  LG_CUDA_CHECK(cudaMemcpyAsync(dst, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  LG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace lg::qwen
