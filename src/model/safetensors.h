// Reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON mapping tensor names to
// {dtype, shape, data_offsets}, then the data section. The reader maps the file read-only and
// hands out spans into the mapping (zero copy), after validating every header entry against the
// file so that a corrupt or lying header is an lg::Error, never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "support/dtype.h"

namespace lg::model {

/// One tensor of a safetensors file, as its header describes it (validated).
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  ///< row-major; empty = scalar
  uint64_t offset = 0;         ///< start of the bytes, relative to the data section
  uint64_t nbytes = 0;         ///< product(shape) * dtype_size(dtype)

  /// Number of elements: product of shape (1 for a scalar).
  uint64_t numel() const;
};

/// safetensors dtype spelling ("F32", "BF16", "F16", "I32", "I64", "U8", "BOOL") <-> lg::DType.
std::string_view safetensors_dtype_name(DType t);
/// nullopt for dtypes lanegraph does not handle (F64, I8, F8_E4M3, ...).
std::optional<DType> parse_safetensors_dtype(std::string_view name);

/// A validated safetensors file held in memory: a read-only mmap of the file (open) or an owned
/// copy of a blob (from_memory, used by the fuzz target and tests). Move-only; unmaps on destruction.
class SafetensorsFile {
 public:
  /// Maps `path` and validates its header. Throws lg::Error naming the file and the tensor/field
  /// at fault: truncated file, header length past EOF or above 100 MiB, malformed JSON, unknown
  /// dtype, shape*dtype size != byte range, offsets outside the data section, tensors that do
  /// not tile it back to back (overlaps, gaps, trailing bytes: huggingface/safetensors refuses them too).
  static SafetensorsFile open(const std::filesystem::path& path);
  /// Same validation on a blob already in memory (copied); `source_name` names it in errors.
  static SafetensorsFile from_memory(std::span<const std::byte> blob, std::string source_name);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  /// The file's path (or the source name given to from_memory), for messages.
  const std::string& source() const { return source_; }
  /// Tensors in header order (the JSON object's key order, which nlohmann sorts by name).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  /// The tensor's bytes inside the mapping; valid while this object lives. `info` must come
  /// from this file's tensors() (checked: a foreign range is an lg::Error).
  std::span<const std::byte> bytes(const TensorInfo& info) const;
  /// The header's "__metadata__" string map (e.g. {"format": "pt"}); empty if absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// Size of the whole file in bytes.
  uint64_t file_size() const { return size_; }

 private:
  SafetensorsFile() = default;
  void parse_header();
  void release() noexcept;

  std::string source_;
  const std::byte* base_ = nullptr;  ///< start of the file
  uint64_t size_ = 0;
  bool mapped_ = false;              ///< base_ is an mmap (else it points into owned_)
  std::unique_ptr<std::byte[]> owned_;
  uint64_t data_start_ = 0;          ///< 8 + header length
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write whose bytes are all in memory. `data.size()` must equal numel * dtype size.
struct OwnedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};

/// A tensor to write whose bytes are produced on demand, so that multi-GB checkpoints are written
/// without holding them in memory: `fill(chunk, offset)` must fill `chunk` with the bytes at
/// [offset, offset + chunk.size()) of the tensor; it is called in increasing offset order with
/// chunks of at most 16 MiB.
struct StreamedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::function<void(std::span<std::byte> chunk, uint64_t offset)> fill;
};

/// Writes a safetensors file (data in the given order, header padded with spaces to 8 bytes as
/// the reference writer does). Throws lg::Error on a duplicate name, a size mismatch, or I/O failure.
/// The file is written as "<path>.partial" and renamed at the end: a failure leaves no file at `path`.
void write_safetensors(const std::filesystem::path& path, const std::vector<OwnedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
/// Streaming form: memory use is one 16 MiB chunk regardless of the checkpoint size.
void write_safetensors(const std::filesystem::path& path, const std::vector<StreamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace lg::model
