#include "model/model_dir.h"

#include <fmt/format.h>

#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;

ModelDir ModelDir::open(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: model directory does not exist", dir.string()));
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw Error(fmt::format("{}: missing config.json (a Hugging Face model directory needs one)", dir.string()));
  ModelConfig config = load_config(config_path);
  GenerationConfig generation = load_generation_config(dir / "generation_config.json", config);
  Checkpoint checkpoint = Checkpoint::open(dir);
  std::optional<fs::path> tok;
  if (fs::exists(dir / "tokenizer.json")) tok = dir / "tokenizer.json";
  return ModelDir{dir, std::move(config), std::move(generation), std::move(checkpoint), std::move(tok), {}, 0, 0};
}

}  // namespace lg::model
