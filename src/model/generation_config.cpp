// generation_config.json: decoding defaults, merged with config.json's special token ids.
#include "model/generation_config.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/json_fields.h"
#include "support/error.h"

namespace lg::model {

using namespace json_fields;

GenerationConfig parse_generation_config(const nlohmann::json& j, const std::string& src,
                                         const ModelConfig& config) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object, got {}", src, j.type_name()));
  GenerationConfig g;
  g.eos_token_ids = int_or_list(j, "eos_token_id", src);
  // Union with config.json's ids: generation_config's first, as transformers checks either.
  for (int64_t id : config.eos_token_ids) add_eos_token_id(g, id);
  g.bos_token_id = opt_int(j, "bos_token_id", src);
  if (!g.bos_token_id) g.bos_token_id = config.bos_token_id;
  g.pad_token_id = opt_int(j, "pad_token_id", src);
  if (!g.pad_token_id) g.pad_token_id = config.pad_token_id;
  g.do_sample = opt_bool(j, "do_sample", src).value_or(false);
  g.temperature = opt_number(j, "temperature", src).value_or(1.0);
  g.top_p = opt_number(j, "top_p", src).value_or(1.0);
  g.top_k = opt_int(j, "top_k", src).value_or(0);
  g.repetition_penalty = opt_number(j, "repetition_penalty", src).value_or(1.0);
  g.min_p = opt_number(j, "min_p", src).value_or(0.0);
  g.max_new_tokens = opt_int(j, "max_new_tokens", src);
  if (g.temperature < 0) throw Error(fmt::format("{}: field 'temperature' must be >= 0", src));
  if (g.top_p <= 0 || g.top_p > 1) throw Error(fmt::format("{}: field 'top_p' must be in (0, 1]", src));
  if (g.top_k < 0) throw Error(fmt::format("{}: field 'top_k' must be >= 0", src));
  if (!(g.repetition_penalty > 0)) throw Error(fmt::format("{}: field 'repetition_penalty' must be > 0", src));
  if (!(g.min_p >= 0 && g.min_p <= 1)) throw Error(fmt::format("{}: field 'min_p' must be in [0, 1]", src));
  if (g.max_new_tokens && *g.max_new_tokens < 1)
    throw Error(fmt::format("{}: field 'max_new_tokens' must be >= 1", src));
  return g;
}

std::string sampling_defaults(const GenerationConfig& g) {
  std::vector<std::string> parts;
  if (g.do_sample) parts.push_back(fmt::format("temperature {}", g.temperature));
  if (g.top_k != 0) parts.push_back(fmt::format("top_k {}", g.top_k));
  if (g.top_p != 1) parts.push_back(fmt::format("top_p {}", g.top_p));
  if (g.min_p != 0) parts.push_back(fmt::format("min_p {}", g.min_p));
  if (g.repetition_penalty != 1) parts.push_back(fmt::format("repetition_penalty {}", g.repetition_penalty));
  if (g.max_new_tokens) parts.push_back(fmt::format("max_new_tokens {}", *g.max_new_tokens));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void add_eos_token_id(GenerationConfig& generation, std::optional<int64_t> id) {
  auto& ids = generation.eos_token_ids;
  if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
}

GenerationConfig load_generation_config(const std::filesystem::path& path, const ModelConfig& config) {
  if (!std::filesystem::exists(path)) return parse_generation_config(nlohmann::json::object(), path.string(), config);
  return parse_generation_config(read_json_file(path), path.string(), config);
}

}  // namespace lg::model
