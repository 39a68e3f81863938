// generation_config.json: the decoding defaults a Hugging Face model ships with. Absent file ->
// the defaults below (greedy). Note HF's own GenerationConfig defaults top_k to 50, which only
// matters when sampling; lanegraph uses 0 (= no top-k filter) so an absent field means "off".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace lg::model {

/// Decoding defaults. eos_token_ids is the union of generation_config's and config.json's, and
/// of the tokenizer's eos token where the caller has a tokenizer (add_eos_token_id).
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id, pad_token_id;
  bool do_sample = false;
  double temperature = 1, top_p = 1;
  int64_t top_k = 0;
  /// The model's recommended repetition_penalty and min_p (Qwen2.5-Instruct ships 1.05): defaults
  /// of every request, sampled or greedy, as vLLM's `--generation-config auto` takes them.
  double repetition_penalty = 1;
  double min_p = 0;
  /// The default of a request's max_tokens where the request sets none (vLLM's max_tokens default).
  std::optional<int64_t> max_new_tokens;
};

/// Parses a generation_config.json document (fields of the wrong type are an lg::Error naming
/// `source_name` and the field) and merges eos/bos/pad from `config` where it leaves them out.
GenerationConfig parse_generation_config(const nlohmann::json& json, const std::string& source_name,
                                         const ModelConfig& config);
/// Loads `path` if it exists; otherwise the defaults with eos/bos/pad taken from `config`.
GenerationConfig load_generation_config(const std::filesystem::path& path, const ModelConfig& config);

/// The decoding defaults `g` sets that differ from the neutral ones (greedy, no top-k/top-p/min_p
/// filter, no penalty, no token limit), as "name value" pairs joined by ", " in the order
/// temperature (only with do_sample), top_k, top_p, min_p, repetition_penalty, max_new_tokens;
/// empty when none. For the note lg run, serve and batch print, as vLLM warns that the model's
/// generation config overrides its own defaults.
std::string sampling_defaults(const GenerationConfig& g);

/// Adds `id` to the ids generation stops on unless it is there already (each id once, in the order
/// first seen). For the tokenizer's eos token (tokenizer_config.json's eos_token), which vLLM stops
/// on as well and which neither config may list (Qwen3 chat models end a turn with <|im_end|>,
/// their configs name <|endoftext|>); `none` adds nothing.
void add_eos_token_id(GenerationConfig& generation, std::optional<int64_t> id);

}  // namespace lg::model
