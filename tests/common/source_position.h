// Where a line of a .lg file sits, as diagnostics name it, for tests that check an error points at
// a declaration without writing its line number down (the programs in models/ change).
#pragma once

#include <fstream>
#include <string>

namespace lg::test {

/// "PATH:LINE:COL" of the first line of `path` holding `needle` (LINE 1-based, COL the 1-based
/// byte column where `needle` starts), as ir::span_text and the .lg diagnostics write a position;
/// "<no line of PATH holds NEEDLE>" if none does, which no expected message contains.
inline std::string source_position(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (const size_t at = line.find(needle); at != std::string::npos)
      return path + ":" + std::to_string(n) + ":" + std::to_string(at + 1);
  return "<no line of " + path + " holds " + needle + ">";
}

}  // namespace lg::test
