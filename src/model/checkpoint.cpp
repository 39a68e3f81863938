// Checkpoint: a name -> (file, tensor) index over one or several safetensors files, with the
// sharded layout of transformers' save_pretrained (model.safetensors.index.json: {"metadata":
// {...}, "weight_map": {tensor name: shard file name}}).
#include "model/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/json_fields.h"
#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;

void Checkpoint::add_file(SafetensorsFile file) {
  const size_t fi = files_.size();
  for (size_t ti = 0; ti < file.tensors().size(); ++ti) {
    const std::string& name = file.tensors()[ti].name;
    auto [it, inserted] = index_.emplace(name, Location{fi, ti});
    if (!inserted)
      throw Error(fmt::format("{}: tensor '{}' is also in {}: a tensor must be stored once", file.source(),
                              name, files_[it->second.file].source()));
  }
  files_.push_back(std::move(file));
}

// A user coming from llama.cpp or an older checkpoint otherwise read that the directory held no
// weights at all.
std::optional<std::string> unread_weights(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());  // the same file named on every run
  const auto ends_with = [](const std::string& n, std::string_view tail) { return n.ends_with(tail); };
  for (const auto& n : names)
    if (ends_with(n, ".gguf"))
      return fmt::format("{} is a GGUF file (llama.cpp's format); lanegraph reads Hugging Face checkpoints: "
                         "config.json with *.safetensors (the model's original repository has them)",
                         n);
  for (const auto& n : names)
    // training_args.bin, which HF's Trainer writes beside the weights, is a pickle but not weights.
    if ((n.starts_with("pytorch_model") && ends_with(n, ".bin")) || ends_with(n, ".pth") || ends_with(n, ".pt"))
      return fmt::format("{} holds PyTorch weights (a pickle); lanegraph reads safetensors only: convert them with "
                         "transformers (AutoModelForCausalLM.from_pretrained(dir).save_pretrained(out, "
                         "safe_serialization=True))",
                         n);
  for (const auto& n : names)
    if (ends_with(n, ".safetensors"))
      return fmt::format("it holds {} but no model.safetensors.index.json, the index saying which file holds each "
                         "tensor (save_pretrained writes it beside the shards)",
                         n);
  return std::nullopt;
}

Checkpoint Checkpoint::open(const fs::path& dir) {
  Checkpoint c;
  c.source_ = dir;
  if (fs::is_regular_file(dir)) {
    c.add_file(SafetensorsFile::open(dir));
    return c;
  }
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: no such checkpoint directory", dir.string()));
  const fs::path single = dir / "model.safetensors";
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {
    c.add_file(SafetensorsFile::open(single));
    return c;
  }
  if (!fs::exists(index_path)) {
    if (const auto why = unread_weights(dir))
      throw Error(fmt::format("{}: no model.safetensors or model.safetensors.index.json: {}", dir.string(), *why));
    // A config alone (bench/shapes/*) is a shape, not a model: lg bench and lg serve run it on
    // random weights (this reader does not know which command asked, so both are named).
    throw Error(fmt::format("{}: no model.safetensors or model.safetensors.index.json{}", dir.string(),
                            fs::exists(dir / "config.json")
                                ? " (a config.json alone: `lg bench --shape DIR` or `lg serve --shape DIR` runs that "
                                  "shape on random weights)"
                                : ""));
  }

  const nlohmann::json index = read_json_file(index_path);
  const std::string ip = index_path.string();
  if (!index.is_object()) throw Error(fmt::format("{}: expected a JSON object, got {}", ip, index.type_name()));
  const nlohmann::json& weight_map =
      json_fields::req_object(index, "weight_map", ip, "an object of tensor name -> shard file");
  // shard file -> the tensors the index says it holds, in a stable order.
  std::map<std::string, std::vector<std::string>> shards;
  for (auto& [name, shard] : weight_map.items()) {
    if (!shard.is_string())
      throw Error(fmt::format("{}: field 'weight_map.{}' must be a shard file name", ip, name));
    const std::string file = shard.get<std::string>();
    // Shards live next to the index; a path component would let an index point anywhere.
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      throw Error(fmt::format("{}: field 'weight_map.{}': shard name '{}' must be a plain file name", ip,
                              name, file));
    shards[file].push_back(name);
  }
  if (shards.empty()) throw Error(fmt::format("{}: field 'weight_map' is empty", ip));
  for (auto& [file, names] : shards) {
    const fs::path p = dir / file;
    if (!fs::exists(p))
      throw Error(fmt::format("{}: shard '{}' is missing (it holds '{}'{}); expected at {}", ip, file,
                              names.front(),
                              names.size() > 1 ? fmt::format(" and {} more tensors", names.size() - 1) : "",
                              p.string()));
    SafetensorsFile f = SafetensorsFile::open(p);
    for (auto& n : names)
      if (!f.find(n))
        throw Error(fmt::format("{}: tensor '{}' is mapped to shard '{}' but {} does not hold it", ip, n,
                                file, p.string()));
    c.add_file(std::move(f));
  }
  return c;
}

bool Checkpoint::contains(std::string_view name) const { return index_.count(std::string(name)) != 0; }

std::vector<std::string> Checkpoint::nearest_names(std::string_view name, size_t k) const {
  std::vector<std::pair<size_t, const std::string*>> scored;
  scored.reserve(index_.size());
  for (auto& [n, loc] : index_) scored.emplace_back(edit_distance(name, n), &n);
  std::sort(scored.begin(), scored.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < k; ++i) out.push_back(*scored[i].second);
  return out;
}

void Checkpoint::throw_missing(std::string_view name) const {
  throw Error(fmt::format("{}: missing tensor '{}' (nearest present: {})", source_.string(), name,
                          fmt::join(nearest_names(name), ", ")));
}

const TensorInfo& Checkpoint::info(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) throw_missing(name);
  return files_[it->second.file].tensors()[it->second.tensor];
}

std::span<const std::byte> Checkpoint::bytes(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) throw_missing(name);
  const SafetensorsFile& f = files_[it->second.file];
  return f.bytes(f.tensors()[it->second.tensor]);
}

std::vector<float> Checkpoint::to_f32(std::string_view name) const {
  const TensorInfo& t = info(name);
  auto b = bytes(name);
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out.data(), b.data(), n * 4);
      break;
    case DType::BF16:
    case DType::F16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, b.data() + 2 * i, 2);  // the data may be only 1-byte aligned
        out[i] = t.dtype == DType::BF16 ? bf16_to_f32(v) : f16_to_f32(v);
      }
      break;
    default:
      throw Error(fmt::format("{}: tensor '{}' is {}, not a float type: cannot read it as f32",
                              source_.string(), name, dtype_name(t.dtype)));
  }
  return out;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (auto& [n, loc] : index_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

void Checkpoint::require(const std::vector<TensorSpec>& specs) const {
  std::vector<std::string> problems;
  for (auto& s : specs) {
    auto it = index_.find(s.name);
    if (it == index_.end()) {
      problems.push_back(fmt::format("missing tensor '{}' (nearest present: {})", s.name,
                                     fmt::join(nearest_names(s.name), ", ")));
      continue;
    }
    const TensorInfo& t = files_[it->second.file].tensors()[it->second.tensor];
    if (s.dtype && *s.dtype != t.dtype)
      problems.push_back(fmt::format("tensor '{}': dtype is {}, expected {}", s.name, dtype_name(t.dtype),
                                     dtype_name(*s.dtype)));
    if (s.shape && *s.shape != t.shape)
      problems.push_back(fmt::format("tensor '{}': shape is [{}], expected [{}]", s.name,
                                     fmt::join(t.shape, ", "), fmt::join(*s.shape, ", ")));
  }
  if (!problems.empty())
    throw Error(fmt::format("{}: checkpoint does not match the model ({} problem{}):\n  {}", source_.string(),
                            problems.size(), problems.size() == 1 ? "" : "s", fmt::join(problems, "\n  ")));
}

uint64_t Checkpoint::parameter_count() const {
  uint64_t n = 0;
  for (auto& f : files_)
    for (auto& t : f.tensors()) n += t.numel();
  return n;
}

uint64_t Checkpoint::byte_size() const {
  uint64_t n = 0;
  for (auto& f : files_)
    for (auto& t : f.tensors()) n += t.nbytes;
  return n;
}

namespace {

/// Lets the kernel drop the pages of `b` from this process's mapping once they are read: hashing a
/// 16 GB checkpoint must not leave 16 GB resident (the file stays in the page cache; a later read
/// faults the pages back in).
void release_pages(std::span<const std::byte> b) {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto lo = (reinterpret_cast<uintptr_t>(b.data()) + page - 1) / page * page;
  const auto hi = (reinterpret_cast<uintptr_t>(b.data()) + b.size()) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

}  // namespace

std::string Checkpoint::weights_hash() const {
  XXH3_state_t* st = XXH3_createState();
  if (!st || XXH3_64bits_reset(st) != XXH_OK) throw Error(source_.string() + ": cannot start the weights hash");
  auto add = [st](const void* p, size_t n) { XXH3_64bits_update(st, p, n); };
  auto add_u64 = [&](uint64_t v) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    add(le, 8);
  };
  for (auto& name : names()) {
    const TensorInfo& t = info(name);
    add(name.data(), name.size());
    add("", 1);  // terminator so that names cannot run into the dtype
    auto dn = safetensors_dtype_name(t.dtype);
    add(dn.data(), dn.size());
    add_u64(t.shape.size());
    for (int64_t d : t.shape) add_u64(static_cast<uint64_t>(d));
    // In pieces, each let go once hashed: the largest tensor (an embedding of 1-2 GB) never
    // stays resident whole.
    const auto b = bytes(name);
    constexpr size_t kPiece = size_t{64} << 20;
    for (size_t at = 0; at < b.size(); at += kPiece) {
      const auto piece = b.subspan(at, std::min(kPiece, b.size() - at));
      add(piece.data(), piece.size());
      release_pages(piece);
    }
  }
  const XXH64_hash_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{}{:016x}", kWeightsHashPrefix, h);
}

}  // namespace lg::model
