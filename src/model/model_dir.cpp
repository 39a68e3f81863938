#include "model/model_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;

std::string not_a_model_directory(const fs::path& path) {
  // A llama.cpp user's model is one .gguf file: it cannot be pointed at the directory beside it.
  if (path.extension() == ".gguf")
    return fmt::format("{}: is a GGUF file (llama.cpp's format), not a model directory: lanegraph reads Hugging Face "
                       "checkpoint directories (config.json, *.safetensors, tokenizer.json)",
                       path.string());
  return fmt::format("{}: is a file, not a model directory (give the directory holding config.json)", path.string());
}

ModelDir ModelDir::open(const fs::path& dir) {
  if (fs::exists(dir) && !fs::is_directory(dir)) throw Error(not_a_model_directory(dir));
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: model directory does not exist", dir.string()));
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw Error(fmt::format("{}: missing config.json (a Hugging Face model directory needs one)", dir.string()));
  ModelConfig config = load_config(config_path);
  // An eos id outside the vocabulary is never sampled, so generation never stops on it. A warning,
  // not an error: some checkpoints list ids of added tokens that are handled elsewhere. Each id
  // is named with the file it came from (generation_config.json's are merged with config.json's).
  auto warn_outside = [&](const std::string& file, int64_t id) {
    if (config.vocab_size > 0 && (id < 0 || id >= config.vocab_size))
      fmt::print(stderr,
                 "lg: warning: {}: eos_token_id {} is outside [0, vocab_size {}): generation never stops on it\n",
                 file, id, config.vocab_size);
  };
  for (int64_t id : config.eos_token_ids) warn_outside(config.source, id);
  const fs::path generation_path = dir / "generation_config.json";
  GenerationConfig generation = load_generation_config(generation_path, config);
  for (int64_t id : generation.eos_token_ids)
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end())
      warn_outside(generation_path.string(), id);
  Checkpoint checkpoint = Checkpoint::open(dir);
  std::optional<fs::path> tok;
  if (fs::exists(dir / "tokenizer.json")) tok = dir / "tokenizer.json";
  return ModelDir{dir, std::move(config), std::move(generation), std::move(checkpoint), std::move(tok), {}, 0, 0};
}

}  // namespace lg::model
