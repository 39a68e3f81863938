// Which .lg program describes a model directory: config.json's model_type names the file
// (qwen2 -> qwen2.lg, which also covers Qwen2.5; qwen3 -> qwen3.lg), looked up in the model
// source folders. Adding an architecture is adding a .lg file, never editing a switch.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "model/config.h"

namespace lg::runtime {

/// The folders searched for <model_type>.lg, in order: $LG_MODELS_DIR (if set), then
/// builtin_model_source_dirs().
std::vector<std::filesystem::path> model_source_dirs();

/// The folders searched whatever the environment: the models/ folder of the source tree this
/// build was made from (compiled in), and <folder of the running executable>/../share/lanegraph/models.
std::vector<std::filesystem::path> builtin_model_source_dirs();

/// The .lg file for `config`. Throws lg::Error naming model_type (and the architectures) and the
/// folders searched when no .lg file covers it.
std::filesystem::path find_model_source(const model::ModelConfig& config);

}  // namespace lg::runtime
