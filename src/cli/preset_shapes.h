// The real model shapes `lg bench` and `lg serve --shape` run at without a checkpoint: random
// weights made on the GPU at the shape of a published config.json, a preset's or a directory's
// (bench/shapes/*).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/path_checks.h"
#include "model/config.h"
#include "support/error.h"

namespace lg::cli {

/// The names preset_config() knows, for help text and errors.
inline const char* preset_shape_names() { return "qwen3-0.6b, qwen3-8b"; }

/// The config.json of a real Qwen3 shape ("qwen3-0.6b", "qwen3-8b": the fields of HF
/// Qwen/Qwen3-* config.json that the .lg program and the lanes read), parsed as a checkpoint's
/// would be. Throws lg::Error for another name, listing the known ones and then `alternatives`
/// (", or a model directory" where a command takes one too).
inline model::ModelConfig preset_config(const std::string& name, const std::string& alternatives = "") {
  nlohmann::json c = {{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3"},
                      {"vocab_size", 151936}, {"head_dim", 128}, {"num_key_value_heads", 8},
                      {"rms_norm_eps", 1e-6}, {"rope_theta", 1e6}, {"attention_bias", false},
                      {"hidden_act", "silu"}, {"max_position_embeddings", 40960}, {"torch_dtype", "bfloat16"}};
  if (name == "qwen3-0.6b") {
    c.update({{"hidden_size", 1024}, {"intermediate_size", 3072}, {"num_hidden_layers", 28},
              {"num_attention_heads", 16}, {"tie_word_embeddings", true}});
  } else if (name == "qwen3-8b") {
    c.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 36},
              {"num_attention_heads", 32}, {"tie_word_embeddings", false}});
  } else {
    throw Error("--shape '" + name + "': known shapes are " + preset_shape_names() + alternatives);
  }
  return model::parse_config(c, "preset " + name);
}

/// A shape to make random weights at: its name (the served model id) and its config.
struct RandomShape {
  std::string name;
  model::ModelConfig config;
};

/// What `--shape` names when it is not a checkpoint: a preset (preset_config), or a directory
/// holding a config.json and no weights (bench/shapes/*), named by its last component. Throws
/// lg::Error for an unknown name (listing the presets, then `alternatives`), a directory without
/// a config.json, one with weights (a checkpoint, which --model serves), or a bad config.json.
inline RandomShape random_shape(const std::string& shape, const std::string& alternatives) {
  std::error_code ec;
  if (!std::filesystem::is_directory(shape, ec)) return {shape, preset_config(shape, alternatives)};
  const std::filesystem::path dir(shape);
  if (!std::filesystem::exists(dir / "config.json", ec))
    throw Error("--shape '" + shape + "': this directory has no config.json (a shape directory holds a model's " +
                "config.json alone, as bench/shapes/* do)");
  if (!config_only_dir(dir))
    throw Error("--shape '" + shape + "' holds weights (*.safetensors): it is a checkpoint, not a shape; give it as " +
                "--model to serve its weights");
  return {std::filesystem::weakly_canonical(dir, ec).filename().string(), model::load_config(dir / "config.json")};
}

}  // namespace lg::cli
