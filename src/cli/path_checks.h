// The check every path option of the subcommands shares: `-o ""` (an unset shell variable) names
// no file, and would otherwise surface later as ": cannot write" naming nothing, or as a success
// that wrote nothing (`lg compile --explain -o ''`).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace lg::cli {

/// Throws the usage error "-o,--out: needs WANTS, got an empty path" (exit 2, main.cpp) when
/// option `opt` was given with an empty `value`. Called from the subcommand's callback, after
/// parsing, so the message names every spelling of the option (a validator's names only one).
inline void refuse_empty_path(const CLI::Option* opt, const std::string& value, const std::string& wants) {
  if (opt->count() != 0 && value.empty())
    throw CLI::ValidationError(opt->get_name(false, true) + ": needs " + wants + ", got an empty path");
}

}  // namespace lg::cli
