// A Hugging Face model directory: config.json, generation_config.json (optional), model.safetensors
// or sharded safetensors with an index, and tokenizer.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/generation_config.h"

namespace lg::model {

/// What a path given as a model directory that is a file is said to be: "PATH: is a file, not a
/// model directory (...)", or for a .gguf, that it is llama.cpp's format and what to give instead.
std::string not_a_model_directory(const std::filesystem::path& path);
/// What a model directory that does not exist is said to be: "PATH: model directory does not
/// exist", and for a path written as a Hugging Face id (Qwen/Qwen3-0.6B, as vLLM and llama.cpp's
/// -hf take one), that lanegraph downloads nothing and how to fetch it.
std::string missing_model_directory(const std::filesystem::path& path);

/// Everything lanegraph reads from a model directory, loaded and validated.
struct ModelDir {
  std::filesystem::path dir;
  ModelConfig config;
  GenerationConfig generation;
  Checkpoint checkpoint;
  std::optional<std::filesystem::path> tokenizer_json;  ///< dir/tokenizer.json when present
  /// The .lg program to run (`--program FILE.lg`); empty: the one config.json's model_type names
  /// (runtime/model_source.h).
  std::filesystem::path program;
  /// What the program binds for this config (runtime::resolve_program fills them; 0 before): the
  /// context S (max_position_embeddings, or the program's own `S = ...`, GPT-2's n_positions) and
  /// the vocabulary V, the width of its logits.
  int64_t context = 0, vocab = 0;

  /// Loads `dir`. lg::Error if the directory or its config.json is missing, or any part is invalid.
  static ModelDir open(const std::filesystem::path& dir);
};

}  // namespace lg::model
