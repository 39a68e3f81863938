#include "model/checkpoint_writer.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;

namespace {
uint64_t data_bytes(const StreamedTensor& t) {
  uint64_t n = dtype_size(t.dtype);
  for (int64_t d : t.shape) n *= static_cast<uint64_t>(d < 0 ? 0 : d);  // negatives refused by the writer
  return n;
}
}  // namespace

std::vector<fs::path> write_checkpoint(const fs::path& dir, const std::vector<StreamedTensor>& tensors,
                                       uint64_t max_shard_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory: {}", dir.string(), ec.message()));
  // Greedy packing in the given order, as save_pretrained does.
  std::vector<std::vector<StreamedTensor>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (auto& t : tensors) {
    const uint64_t n = data_bytes(t);
    if (!shards.back().empty() && in_shard + n > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += n;
    total += n;
  }
  if (shards.size() == 1) {
    write_safetensors(dir / "model.safetensors", shards[0]);
    return {dir / "model.safetensors"};
  }
  std::vector<fs::path> files;
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                  {"weight_map", nlohmann::ordered_json::object()}};
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    write_safetensors(dir / name, shards[s]);
    for (auto& t : shards[s]) index["weight_map"][t.name] = name;
    files.push_back(dir / name);
  }
  const fs::path index_path = dir / "model.safetensors.index.json";
  std::ofstream out(index_path);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed", index_path.string()));
  files.push_back(index_path);
  return files;
}

std::vector<fs::path> write_checkpoint(const fs::path& dir, const std::vector<OwnedTensor>& tensors,
                                       uint64_t max_shard_bytes) {
  std::vector<StreamedTensor> streamed;
  streamed.reserve(tensors.size());
  for (auto& t : tensors) {
    const OwnedTensor* src = &t;
    const uint64_t need = data_bytes(StreamedTensor{t.name, t.dtype, t.shape, {}});
    if (need != t.data.size())
      throw Error(fmt::format("{}: cannot write tensor '{}': shape needs {} bytes, data has {}", dir.string(),
                              t.name, need, t.data.size()));
    streamed.push_back({t.name, t.dtype, t.shape, [src](std::span<std::byte> chunk, uint64_t offset) {
                          if (offset + chunk.size() > src->data.size())
                            throw Error(fmt::format("tensor '{}': data has {} bytes, shape needs more",
                                                    src->name, src->data.size()));
                          std::memcpy(chunk.data(), src->data.data() + offset, chunk.size());
                        }});
  }
  return write_checkpoint(dir, streamed, max_shard_bytes);
}

}  // namespace lg::model
