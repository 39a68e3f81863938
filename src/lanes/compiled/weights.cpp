#include "lanes/compiled/weights.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lanes/compiled/device_ops.h"
#include "runtime/bind_params.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/fill.h"
#include "support/dtype.h"
#include "support/error.h"
#include "support/fnv1a.h"

namespace lg::compiled {

namespace {

// fp32 host values to the buffer's dtype (bf16 rounded to nearest even).
void upload_host(const std::vector<float>& f, const emit::cuda::Buffer& b, void* dst) {
  // A stacked weight's neighbour starts where it ends (Buffer::stack): exactly its bytes.
  if (f.size() * dtype_size(b.dtype) != static_cast<size_t>(b.bytes))
    throw Error("compiled lane: " + std::to_string(f.size()) + " values for the " + std::to_string(b.bytes) +
                "-byte buffer " + b.name);
  if (b.dtype == DType::BF16) {
    std::vector<uint16_t> h(f.size());
    for (size_t j = 0; j < f.size(); ++j) h[j] = f32_to_bf16(f[j]);
    cuda::copy_to_device_now(dst, h.data(), h.size() * 2);
  } else {
    cuda::copy_to_device_now(dst, f.data(), f.size() * 4);
  }
}

}  // namespace

void upload_weight(const model::Checkpoint& ckpt, const ir::ParamInfo& prm, const emit::cuda::Buffer& b,
                   void* dst, cuda::PinnedUploader& uploader, cudaStream_t stream) {
  if (!prm.parts.empty()) {
    // Stacked experts: each part's bytes at its slice of the buffer when the dtypes agree (a
    // bf16 checkpoint); otherwise widened or narrowed on the host.
    const bool same = std::all_of(prm.parts.begin(), prm.parts.end(),
                                  [&](const std::string& t) { return ckpt.info(t).dtype == b.dtype; });
    if (!same) return upload_host(runtime::param_f32(ckpt, prm), b, dst);
    size_t offset = 0;
    for (const std::string& part : prm.parts) {
      auto bytes = ckpt.bytes(part);
      if (offset + bytes.size() > static_cast<size_t>(b.bytes))
        throw Error("compiled lane: expert tensor " + part + " overflows its buffer " + b.name);
      uploader.upload(static_cast<char*>(dst) + offset, bytes.data(), bytes.size(), stream);
      offset += bytes.size();
    }
    return;
  }
  const std::string& tensor = prm.tensor;
  const auto& info = ckpt.info(tensor);
  if (prm.transposed) {
    // Stored [in, out] (`"name".T`): swapped on the host once at load, so the kernels see the
    // [out, in] layout every other projection has.
    upload_host(runtime::param_f32(ckpt, prm), b, dst);
    return;
  }
  if (info.dtype == b.dtype) {  // bf16 -> bf16 or f32 -> f32: the bytes as they are
    auto bytes = ckpt.bytes(tensor);
    // A stacked weight's neighbour starts where it ends (Buffer::stack): never write past it.
    if (bytes.size() != static_cast<size_t>(b.bytes))
      throw Error("compiled lane: tensor " + tensor + " has " + std::to_string(bytes.size()) + " bytes, its buffer " +
                  std::to_string(b.bytes));
    uploader.upload(dst, bytes.data(), bytes.size(), stream);  // read from the mapping when it returns
    return;
  }
  if (info.dtype == DType::BF16 && b.dtype == DType::F32) {  // widen on the device (exact)
    auto bytes = ckpt.bytes(tensor);
    cuda::DeviceBuffer tmp(bytes.size());
    uploader.upload(tmp.data(), bytes.data(), bytes.size(), stream);
    widen_bf16(tmp.as<uint16_t>(), bytes.size() / 2, static_cast<float*>(dst), stream);
    LG_CUDA_CHECK(cudaStreamSynchronize(stream));  // tmp is freed on return
    return;
  }
  upload_host(ckpt.to_f32(tensor), b, dst);
}

void random_weight(const ir::ParamInfo& prm, const emit::cuda::Buffer& b, void* dst, uint64_t seed,
                   cudaStream_t stream) {
  const size_t n = static_cast<size_t>(b.bytes) / dtype_size(b.dtype);
  if (prm.shape.size() >= 2) {
    if (b.dtype != DType::BF16)
      throw Error("compiled lane: random weights are made for bf16 matrices; `" + prm.tensor + "` is " +
                  std::string(dtype_name(b.dtype)));
    // The tensor name picks the stream, so every weight differs and reruns are identical.
    const uint64_t tensor_seed = fnv1a64(prm.tensor, kFnv1a64Basis ^ seed);
    cuda::fill_uniform_bf16(static_cast<__nv_bfloat16*>(dst), n, tensor_seed, 0.0346f, stream);
    return;
  }
  const bool norm = prm.tensor.find("norm") != std::string::npos;
  if (b.dtype == DType::F32) {
    fill_f32(static_cast<float*>(dst), n, norm ? 1.f : 0.f, stream);
  } else {
    std::vector<uint16_t> h(n, f32_to_bf16(norm ? 1.f : 0.f));
    cuda::copy_to_device_now(dst, h.data(), h.size() * 2);
  }
}

}  // namespace lg::compiled
