// Where the hand-written lane's weights come from: a Hugging Face checkpoint (bf16, f16 or fp32
// tensors, converted to bf16 matrices / fp32 vectors on upload), or deterministic random values
// made on the device at a real shape for `lg bench`. The lane asks for each tensor by its HF name
// and the shape it expects.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lg::model {
class Checkpoint;
}
namespace lg::cuda {
class PinnedUploader;
}

namespace lg::qwen {

/// Fills device memory with named tensors.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  /// Writes tensor `name` of `shape` as bf16 into dst (device). Throws lg::Error naming the tensor
  /// if it is missing or has another shape or a non-float dtype.
  virtual void load_bf16(const std::string& name, const std::vector<int64_t>& shape, __nv_bfloat16* dst,
                         cudaStream_t stream) = 0;
  /// Same, as fp32 (norm weights and biases: small, kept exact).
  virtual void load_f32(const std::string& name, const std::vector<int64_t>& shape, float* dst,
                        cudaStream_t stream) = 0;
  /// Text for messages ("model dir ...", "random weights").
  virtual std::string describe() const = 0;
};

/// Tensors of a checkpoint (which must outlive the source). bf16 tensors go to the device through
/// pinned staging buffers (cuda::PinnedUploader): load_bf16 returns once the tensor has been read
/// from the mapping, and its copy completes in `stream`'s order; the destructor waits for the last.
class CheckpointWeights : public WeightSource {
 public:
  explicit CheckpointWeights(const model::Checkpoint& ckpt);
  ~CheckpointWeights() override;
  void load_bf16(const std::string& name, const std::vector<int64_t>& shape, __nv_bfloat16* dst,
                 cudaStream_t stream) override;
  void load_f32(const std::string& name, const std::vector<int64_t>& shape, float* dst, cudaStream_t stream) override;
  std::string describe() const override;

 private:
  const model::Checkpoint& ckpt_;
  std::unique_ptr<cuda::PinnedUploader> uploader_;  ///< made at the first bf16 tensor
};

/// Random weights: matrices uniform in +-sqrt(3) * 0.02 (std 0.02, transformers' initializer_range),
/// norm weights 1, biases 0. Deterministic in (seed, name).
class RandomWeights : public WeightSource {
 public:
  explicit RandomWeights(uint64_t seed) : seed_(seed) {}
  void load_bf16(const std::string& name, const std::vector<int64_t>& shape, __nv_bfloat16* dst,
                 cudaStream_t stream) override;
  void load_f32(const std::string& name, const std::vector<int64_t>& shape, float* dst, cudaStream_t stream) override;
  std::string describe() const override { return "random weights (seed " + std::to_string(seed_) + ")"; }

 private:
  uint64_t seed_;
};

}  // namespace lg::qwen
