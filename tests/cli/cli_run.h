// Runs the built `lg` binary through the shell and captures its exit code and output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace lg::cli_test {

struct CliRun {
  int code;
  std::string out;  ///< stdout and stderr together
};

/// Runs `lg ARGS` through the shell; `prefix` goes before it (e.g. "ulimit -v N; ").
inline CliRun run_lg(const std::string& args, const std::string& prefix = "") {
  const std::string cmd = prefix + std::string(LG_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

/// Expects `lg ARGS` to be a usage error: exit 2, `message` in its output, and no "lg: error:"
/// (refused while the options are read, before the command ran). `prefix` goes before lg, as
/// run_lg's: "timeout 60 " bounds a command that would otherwise run on.
inline void expect_usage_error(const std::string& args, const std::string& message, const std::string& prefix = "") {
  const CliRun r = run_lg(args, prefix);
  EXPECT_EQ(r.code, 2) << "lg " << args << "\n" << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << "lg " << args << "\n" << r.out;
  EXPECT_EQ(r.out.find("lg: error:"), std::string::npos) << "refused while parsing, before the command ran\n" << r.out;
}

inline const std::string kSource = LG_SOURCE_DIR;
inline const std::string kShared = LG_SHARED_DIR;
inline const std::string kModel = kSource + "/models/qwen3-pycode-22m";  ///< the 22M model shipped in the repo
inline const std::string kTiny = kShared + "/fixtures/tiny-qwen3";
inline const std::string kQwen3 = kSource + "/models/qwen3.lg";

}  // namespace lg::cli_test
