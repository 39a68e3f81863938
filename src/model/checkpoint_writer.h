// Writes a checkpoint directory in the layout transformers' save_pretrained produces, so that tests
// can make sharded checkpoints and `lg bench` can make random-weight checkpoints at real shapes
// (up to tens of GB, streamed: never more than one 16 MiB chunk in memory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "model/safetensors.h"

namespace lg::model {

/// Writes `tensors` (in order) into `dir` (created if needed): one model.safetensors when their
/// data fits in `max_shard_bytes`, else shards model-00001-of-0000N.safetensors, each holding
/// consecutive tensors up to `max_shard_bytes` (a larger tensor gets a shard of its own), plus
/// model.safetensors.index.json {"metadata": {"total_size"}, "weight_map"}. transformers' default
/// shard limit is 5 GB. Returns the files written. Throws lg::Error as write_safetensors does.
std::vector<std::filesystem::path> write_checkpoint(const std::filesystem::path& dir,
                                                    const std::vector<StreamedTensor>& tensors,
                                                    uint64_t max_shard_bytes = 5'000'000'000ull);
/// Same for tensors already in memory.
std::vector<std::filesystem::path> write_checkpoint(const std::filesystem::path& dir,
                                                    const std::vector<OwnedTensor>& tensors,
                                                    uint64_t max_shard_bytes = 5'000'000'000ull);

}  // namespace lg::model
