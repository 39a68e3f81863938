#include "model/model_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

std::string missing_model_directory(const fs::path& path) {
  // owner/name of letters, digits, '-', '_' and '.', as the Hub spells ids; not ./x or ../x.
  const std::string p = path.string();
  const size_t slash = p.find('/');
  const bool hub_id = slash != std::string::npos && slash > 0 && slash + 1 < p.size() &&
                      p.find('/', slash + 1) == std::string::npos && p[0] != '.' &&
                      std::all_of(p.begin(), p.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
                      });
  return fmt::format("{}: model directory does not exist{}", p,
                     hub_id ? fmt::format(" (lanegraph reads a local directory and downloads nothing; for the Hugging "
                                          "Face model {0}: `huggingface-cli download {0} --local-dir DIR`, then -m DIR)",
                                          p)
                            : "");
}

ModelDir ModelDir::open(const fs::path& dir) {
  if (fs::exists(dir) && !fs::is_directory(dir)) throw Error(not_a_model_directory(dir));
  if (!fs::is_directory(dir)) throw Error(missing_model_directory(dir));
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw Error(fmt::format("{}: missing config.json (a Hugging Face model directory needs one){}", dir.string(),
                            fs::exists(dir / "adapter_config.json")
                                ? "; adapter_config.json makes it a PEFT adapter (LoRA) of a base model, which lanegraph "
                                  "does not apply: merge it into the base model (peft's merge_and_unload, then "
                                  "save_pretrained) and give that directory"
                                : ""));
  ModelConfig config = load_config(config_path);
  // A quantized checkpoint (AWQ, GPTQ, FP8, bitsandbytes: what vLLM and llama.cpp users often hold)
  // stores other tensors than the program's params (qweight, scales) or dtypes lanegraph does not
  // read (F8_E4M3): refused by what config.json says it is, rather than as dozens of missing
  // tensors or an unsupported dtype.
  if (const auto q = config.raw.find("quantization_config"); q != config.raw.end() && !q->is_null()) {
    const auto method = q->is_object() ? q->find("quant_method") : q->end();
    throw Error(fmt::format("{}: quantization_config{}: a quantized checkpoint, which lanegraph does not run (it reads "
                            "unquantized bf16, f16 and f32 weights): use the unquantized model",
                            config_path.string(),
                            method != q->end() && method->is_string() ? " (quant_method \"" + method->get<std::string>() + "\")" : ""));
  }
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
