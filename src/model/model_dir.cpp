#include "model/model_dir.h"

#include <fmt/format.h>

#include <cstdio>

#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;

ModelDir ModelDir::open(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: model directory does not exist", dir.string()));
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw Error(fmt::format("{}: missing config.json (a Hugging Face model directory needs one)", dir.string()));
  ModelConfig config = load_config(config_path);
  // An eos id outside the vocabulary is never sampled, so generation never stops on it. A warning,
  // not an error: some checkpoints list ids of added tokens that are handled elsewhere.
  if (config.vocab_size > 0)
    for (int64_t id : config.eos_token_ids)
      if (id < 0 || id >= config.vocab_size)
        fmt::print(stderr,
                   "lg: warning: {}: eos_token_id {} is outside [0, vocab_size {}): generation never stops on it\n",
                   config.source, id, config.vocab_size);
  GenerationConfig generation = load_generation_config(dir / "generation_config.json", config);
  Checkpoint checkpoint = Checkpoint::open(dir);
  std::optional<fs::path> tok;
  if (fs::exists(dir / "tokenizer.json")) tok = dir / "tokenizer.json";
  return ModelDir{dir, std::move(config), std::move(generation), std::move(checkpoint), std::move(tok), {}, 0, 0};
}

}  // namespace lg::model
