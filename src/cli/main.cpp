// `lg`: the command-line front of lanegraph. Subcommands register themselves (see command.h);
// this file only builds the app, dispatches, and turns lg::Error into a message and exit code 1
// (and a single-value option given twice into a usage error that says so).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "support/did_you_mean.h"
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

namespace {

/// A value as a usage message quotes it: at most 40 characters, so a long prompt stays readable.
std::string quoted(const std::string& v) { return "'" + (v.size() > 40 ? v.substr(0, 37) + "..." : v) + "'"; }

/// Makes every option of `app` and its subcommands that takes one value a usage error when given
/// more than once, naming it, what it got and its other spellings. CLI11 refuses those too, but in
/// words a new user could not read ("--prompt: At Most 1 required but received 2"); a script that
/// adds `-n 64` to a command line that has `--max-tokens 16` learns which option it gave twice.
/// Flags (repeating -q changes nothing) and list options (--batch 1,16 --batch 64) are left as they are.
void refuse_repeated_options(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0 || opt->get_items_expected_max() != 1) continue;
    opt->check(CLI::Validator(
        [opt](std::string&) -> std::string {
          const auto& given = opt->results();
          if (given.size() < 2) return "";
          std::string values;
          for (const auto& v : given) values += (values.empty() ? "" : ", ") + quoted(v);
          // "-n,--max-tokens" -> " as -n or --max-tokens"; nothing for an option of one spelling.
          std::string spellings = opt->get_name(false, true), as;
          if (const auto last = spellings.rfind(','); last != std::string::npos) {
            spellings.replace(last, 1, " or ");
            for (auto c = spellings.find(','); c != std::string::npos; c = spellings.find(',')) spellings.replace(c, 1, ", ");
            as = ", as " + spellings;
          }
          return "given " + std::to_string(given.size()) + " times" + as + " (" + values +
                 "); it takes one value: give it once";
        },
        "", "given once"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_repeated_options(*sub);
}

/// The usage message for a first argument that is not a command (`lg serv`), or nullopt when it
/// is one or is an option. lg takes no positional argument of its own, so the first word that is
/// not an option can only be a command; CLI11 answered a mistyped one "A subcommand is required".
std::optional<std::string> unknown_command_message(const std::string& given, const std::vector<std::string>& names) {
  if (given.empty() || given[0] == '-' || std::find(names.begin(), names.end(), given) != names.end())
    return std::nullopt;
  std::string lower = given;  // case aside: `lg Run` means run
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string closest;
  size_t best = 3;  // at most two edits away: a typo, not another word
  for (const auto& n : names)
    if (const size_t d = lg::edit_distance(lower, n); d < best && d < n.size()) best = d, closest = n;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "lg: '" + given + "' is not a command" + (closest.empty() ? "" : "; did you mean '" + closest + "'?") +
         " (commands: " + list + ")\nRun with --help for more information.";
}

}  // namespace

}  // namespace lg::cli

namespace {

/// stdout could not be written (a full disk, a closed stdout): the command's output is lost, which
/// exit status 0 would hide. std::cout and fmt both write through stdio's stdout.
bool stdout_failed() {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  return !flushed || std::ferror(stdout) != 0 || !std::cout.good();
}

int stdout_write_failed() {
  std::cerr << "lg: error: standard output: write failed: the output was not all written\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lanegraph: compile and run language-model forward passes written in .lg", "lg"};
  app.set_version_flag("--version", std::string("lg ") + LG_VERSION);
  app.require_subcommand(1);
  auto& commands = lg::cli::registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::function<int()>> runs;
  for (auto& c : commands) runs.push_back(c.setup(app));
  lg::cli::refuse_repeated_options(app);
  if (argc > 1) {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.name);
    if (const auto message = lg::cli::unknown_command_message(argv[1], names)) {
      std::cerr << *message << "\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the help, or the message and "Run with --help"; a usage error exits 2 (as
    // the other commands' errors exit 1), not CLI11's own codes (105, 106, 109, ...).
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (app.got_subcommand(commands[i].name)) {
        const int code = runs[i]();
        return stdout_failed() ? stdout_write_failed() : code;
      }
  } catch (const lg::Error& e) {
    std::cerr << "lg: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // An input too large for memory (a messages file or program read from /dev/zero or a huge
    // pipe) is an error, not std::terminate's abort.
    std::cerr << "lg: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // fmt::print's "cannot write to file" when stdout is full or closed: not a bug.
    if (stdout_failed()) return stdout_write_failed();
    // Every bad input is meant to be an lg::Error naming what is wrong; anything else reaching
    // here is a bug (a JSON type error a reader did not turn into one, say): said as such, with
    // what it was, rather than std::terminate's abort.
    std::cerr << "lg: error: internal error (a bug; please report it with the command): " << e.what() << "\n";
    return 1;
  }
  return 2;
}
