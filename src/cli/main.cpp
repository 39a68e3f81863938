// `lg`: the command-line front of lanegraph. Subcommands register themselves (see command.h);
// this file only builds the app, dispatches, and turns lg::Error into a message and exit code 1.
#include <algorithm>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/command.h"
#include "support/error.h"

namespace lg::cli {

static std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

bool register_command(Command cmd) {
  registry().push_back(std::move(cmd));
  return true;
}

}  // namespace lg::cli

int main(int argc, char** argv) {
  CLI::App app{"lanegraph: compile and run language-model forward passes written in .lg", "lg"};
  app.set_version_flag("--version", std::string("lg ") + LG_VERSION);
  app.require_subcommand(1);
  auto& commands = lg::cli::registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::function<int()>> runs;
  for (auto& c : commands) runs.push_back(c.setup(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the help, or the message and "Run with --help"; a usage error exits 2 (as
    // the other commands' errors exit 1), not CLI11's own codes (105, 106, 109, ...).
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (app.got_subcommand(commands[i].name)) return runs[i]();
  } catch (const lg::Error& e) {
    std::cerr << "lg: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // An input too large for memory (a messages file or program read from /dev/zero or a huge
    // pipe) is an error, not std::terminate's abort.
    std::cerr << "lg: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // Every bad input is meant to be an lg::Error naming what is wrong; anything else reaching
    // here is a bug (a JSON type error a reader did not turn into one, say): said as such, with
    // what it was, rather than std::terminate's abort.
    std::cerr << "lg: error: internal error (a bug; please report it with the command): " << e.what() << "\n";
    return 1;
  }
  return 2;
}
