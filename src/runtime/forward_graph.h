// The forward graph of a model directory: the .lg program chosen by its config's model_type,
// checked and lowered against its config.json, with every param checked against the checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>

#include "ir/ir.h"
#include "model/model_dir.h"

namespace lg::runtime {

struct ForwardGraph {
  std::filesystem::path source;  ///< the .lg file it was lowered from
  ir::Graph graph;               ///< verified; one step of T tokens (prefill or decode)
  int64_t max_seq = 0;           ///< KV-cache capacity S the graph was bound with
};

/// Lowers the model's .lg program with `max_seq` as the KV-cache capacity (0: the config's
/// max_position_embeddings), verifies the graph, and checks every param against the checkpoint
/// (one lg::Error listing all missing/mismatched tensors). Throws lg::Error when no .lg file
/// covers the model_type, for a max_seq above max_position_embeddings, and for a program that
/// does not check against the config (the message carries the rendered diagnostics).
ForwardGraph forward_graph(const model::ModelDir& dir, int64_t max_seq);

/// The same from a config alone, without a checkpoint to check the params against (a random-
/// weight run at a real shape, `lg bench --shape qwen3-8b --lane compiled`). Same errors, less the
/// checkpoint's.
ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq);

}  // namespace lg::runtime
