// A Hugging Face checkpoint: the tensors of a model directory, from one model.safetensors or from
// the shards listed in model.safetensors.index.json. Looks tensors up by their HF names, checks a
// model's expectations in one go (require), and hashes the weights for golden-token locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/safetensors.h"
#include "support/did_you_mean.h"

namespace lg::model {

/// What a model expects of one tensor: its name and, when set, its dtype and shape.
struct TensorSpec {
  std::string name;
  std::optional<DType> dtype;               ///< nullopt: any dtype
  std::optional<std::vector<int64_t>> shape; ///< nullopt: any shape
};

/// All tensors of a checkpoint, memory-mapped. Move-only (it owns the mappings).
/// What Checkpoint::weights_hash() starts with (older locks hold a bare FNV-1a hash).
inline constexpr std::string_view kWeightsHashPrefix = "xxh3:";

/// Why a directory without model.safetensors or its index still holds weights, in a form
/// Checkpoint does not read: PyTorch pickles (pytorch_model*.bin, *.pth, *.pt; not HF Trainer's
/// training_args.bin), llama.cpp's GGUF, or safetensors shards whose index is missing. A sentence
/// naming the file and what to do instead; nullopt when the directory holds none of those.
/// Checkpoint::open's error carries it, and lg inspect of a config without safetensors says it.
std::optional<std::string> unread_weights(const std::filesystem::path& dir);

class Checkpoint {
 public:
  /// Opens `dir`/model.safetensors, else the shards of `dir`/model.safetensors.index.json (each
  /// shard validated; a missing shard, a shard missing a tensor the index maps to it, or a tensor
  /// in two shards is an lg::Error naming the file and tensor). `dir` may also be a single
  /// .safetensors file.
  static Checkpoint open(const std::filesystem::path& dir);

  bool contains(std::string_view name) const;
  /// Throws lg::Error naming the tensor and the nearest names present when absent.
  const TensorInfo& info(std::string_view name) const;
  /// Zero-copy bytes of the tensor (little-endian, row-major); valid while the Checkpoint lives.
  std::span<const std::byte> bytes(std::string_view name) const;
  /// The tensor converted to fp32 (bf16 and f16 widened exactly). Throws lg::Error for integer dtypes.
  std::vector<float> to_f32(std::string_view name) const;
  /// All tensor names, sorted.
  std::vector<std::string> names() const;
  /// Checks every spec; throws one lg::Error listing every missing tensor (with up to 3 nearest
  /// names present, by edit distance) and every dtype/shape mismatch.
  void require(const std::vector<TensorSpec>& specs) const;
  /// Up to `k` names present closest to `name` by edit distance (for error messages).
  std::vector<std::string> nearest_names(std::string_view name, size_t k = 3) const;

  /// Total number of elements over all tensors (a tied lm_head is not stored, so not counted).
  uint64_t parameter_count() const;
  /// Total bytes of tensor data (headers excluded).
  uint64_t byte_size() const;
  /// XXH3-64 (xxHash) over every tensor in name order (name, '\0', dtype, ndim and dims as
  /// little-endian u64, bytes), as "xxh3:" + 16 lowercase hex digits: identifies the exact weights
  /// a golden-token lock was recorded with. Reads every weight byte once (2 GB from the page cache in
  /// 0.4 s, where FNV-1a took 2.7 s) and leaves none of them resident (64 MB pieces let go). Locks made before it carry a
  /// 16-digit FNV-1a hash (no prefix).
  std::string weights_hash() const;

  /// The directory (or file) it was opened from, and the safetensors files it holds.
  const std::filesystem::path& source() const { return source_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  Checkpoint() = default;
  void add_file(SafetensorsFile file);
  [[noreturn]] void throw_missing(std::string_view name) const;

  struct Location {
    size_t file;
    size_t tensor;
  };
  std::filesystem::path source_;
  std::vector<SafetensorsFile> files_;
  std::unordered_map<std::string, Location> index_;
};


}  // namespace lg::model
