// A Hugging Face model directory as published for Qwen2/2.5/3: config.json, generation_config.json
// (optional), model.safetensors or sharded safetensors with an index, and tokenizer.json.
#pragma once

#include <filesystem>
#include <optional>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/generation_config.h"

namespace lg::model {

/// Everything lanegraph reads from a model directory, loaded and validated.
struct ModelDir {
  std::filesystem::path dir;
  ModelConfig config;
  GenerationConfig generation;
  Checkpoint checkpoint;
  std::optional<std::filesystem::path> tokenizer_json;  ///< dir/tokenizer.json when present

  /// Loads `dir`. lg::Error if the directory or its config.json is missing, or any part is invalid.
  static ModelDir open(const std::filesystem::path& dir);
};

}  // namespace lg::model
