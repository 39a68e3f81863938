// The checks of paths the subcommands share: `-o ""` (an unset shell variable) names no file, and
// would otherwise surface later as ": cannot write" naming nothing, or as a success that wrote
// nothing (`lg compile --explain -o ''`); a directory that is a shape (a config.json alone) rather
// than a checkpoint.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace lg::cli {

/// A directory holding a config.json and no safetensors (bench/shapes/*): a model's shape without
/// its weights, which lg bench runs on random weights and lg inspect describes from the config.
inline bool config_only_dir(const std::filesystem::path& d) {
  std::error_code ec;
  if (!std::filesystem::is_directory(d, ec) || !std::filesystem::exists(d / "config.json", ec)) return false;
  for (const auto& e : std::filesystem::directory_iterator(d, ec))
    if (e.path().extension() == ".safetensors" || e.path().filename() == "model.safetensors.index.json") return false;
  return true;
}

/// Throws the usage error "-o,--out: needs WANTS, got an empty path" (exit 2, main.cpp) when
/// option `opt` was given with an empty `value`. Called from the subcommand's callback, after
/// parsing, so the message names every spelling of the option (a validator's names only one).
inline void refuse_empty_path(const CLI::Option* opt, const std::string& value, const std::string& wants) {
  if (opt->count() != 0 && value.empty())
    throw CLI::ValidationError(opt->get_name(false, true) + ": needs " + wants + ", got an empty path");
}

}  // namespace lg::cli
