// Registry of `lg` subcommands. Each subcommand lives in its own cmd_<name>.cpp and registers
// itself with LG_COMMAND, so adding a command never edits a shared file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace lg::cli {

/// A subcommand: `setup` adds it to the app and returns the function run when it is chosen.
/// The run function returns the process exit code (0 ok, 1 bad input, 2 usage).
struct Command {
  std::string name;
  std::function<std::function<int()>(CLI::App& app)> setup;
};

/// Adds a command to the registry (called from static initialisers).
bool register_command(Command cmd);

}  // namespace lg::cli

#define LG_COMMAND_CAT2(a, b) a##b
#define LG_COMMAND_CAT(a, b) LG_COMMAND_CAT2(a, b)
/// LG_COMMAND("check", [](CLI::App& app) { auto* sub = app.add_subcommand(...); return [=]{...}; })
#define LG_COMMAND(name, ...) \
  static const bool LG_COMMAND_CAT(lg_command_registered_, __LINE__) = ::lg::cli::register_command({name, __VA_ARGS__})
