// The GPU lanes' measurement switch that leaves launches out of their decode steps
// (LG_COMPILED_SKIP, LG_QWEN_SKIP): what a step costs without some launches bounds what fusing
// them away could save (bench/RESULTS.md, session 23). Results are wrong while it is set.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include "support/error.h"

namespace lg {

/// The regular expression in environment variable `name` (unset or empty: nullopt), matched
/// against the names of the launches `what` leaves out; says so on stderr once read. Throws
/// lg::Error naming the variable for a malformed expression.
inline std::optional<std::regex> launch_skip_from_env(const char* name, const char* what) {
  const char* e = std::getenv(name);
  if (!e || !*e) return std::nullopt;
  std::optional<std::regex> re;
  try {
    re = std::regex(e);
  } catch (const std::regex_error& err) {
    throw Error(std::string(name) + ": not a regular expression (" + err.what() + "): " + e);
  }
  std::fprintf(stderr, "lg: %s=%s: %s leave those launches out (timing only; wrong results)\n", name, e, what);
  return re;
}

}  // namespace lg
