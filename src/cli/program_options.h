// The options of the commands that read an .lg program against a model's config (`lg check`,
// `lg ir`, `lg compile`): the program file and --config, the same names, checks and help text.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/config.h"
#include "support/error.h"

namespace lg::cli {

/// Adds the positional `file` (an existing .lg program) and the required `--config,-c` (a
/// config.json, or the model directory holding it) to `sub`.
inline void add_program_options(CLI::App* sub, std::string& file, std::string& config) {
  sub->add_option("file", file, "the .lg program (e.g. models/qwen3.lg)")->required()->check(CLI::ExistingFile);
  sub->add_option("--config,-c", config, "config.json of the model, or the model directory holding it")
      ->required()
      ->check(CLI::ExistingPath);
}

/// The line that ends a program's errors: "note: the config read is PATH" (PATH the config.json
/// that --config names, model::config_json_path).
inline std::string config_note(const std::string& config) {
  return "note: the config read is " + lg::model::config_json_path(config).string();
}

/// The warning lg check, lg ir and lg compile give for a --max-seq past config.json's context (its
/// max_position_embeddings, or GPT-2's n_positions: positions past it index no row of its position
/// table), the same words from each: a checker checks and a compiler emits what it is asked for,
/// but lg run, serve and batch refuse such a length, and lg check said nothing where lg compile
/// warned. Empty when there is nothing to say (no --max-seq, no context stated, or a length
/// within it).
inline std::string max_seq_past_context(const nlohmann::json& config, int64_t max_seq) {
  if (max_seq <= 0) return {};
  for (const char* key : {"max_position_embeddings", "n_positions"}) {
    const auto it = config.find(key);
    if (it == config.end() || !it->is_number_integer()) continue;
    const int64_t context = it->get<int64_t>();
    if (context <= 0 || max_seq <= context) return {};
    return fmt::format("--max-seq {} is above the model's context of {} tokens ({}); lg run, serve and batch refuse it",
                       max_seq, context, key);
  }
  return {};
}

/// Lowers with `lower` (a callable returning the graph); a program's errors (a failed `require`,
/// a missing field, an expression that does not evaluate) then end with a line naming the config
/// they read (config_note), since their locations are the program's lines.
template <class Lower>
auto lower_naming_config(const std::string& config, Lower&& lower) {
  try {
    return lower();
  } catch (const lg::Error& e) {
    throw lg::Error(std::string(e.what()) + "\n" + config_note(config));
  }
}

}  // namespace lg::cli
