// The options of the commands that read an .lg program against a model's config (`lg check`,
// `lg ir`, `lg compile`): the program file and --config, the same names, checks and help text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace lg::cli {

/// Adds the positional `file` (an existing .lg program) and the required `--config,-c` (a
/// config.json, or the model directory holding it) to `sub`.
inline void add_program_options(CLI::App* sub, std::string& file, std::string& config) {
  sub->add_option("file", file, "the .lg program (e.g. models/qwen3.lg)")->required()->check(CLI::ExistingFile);
  sub->add_option("--config,-c", config, "config.json of the model, or the model directory holding it")
      ->required()
      ->check(CLI::ExistingPath);
}

}  // namespace lg::cli
