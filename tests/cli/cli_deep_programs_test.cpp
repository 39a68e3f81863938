// Long and deep programs through the `lg` binary as a new user runs them: `lg check` and `lg ir`
// of 200,000-term `+`, `??` and `&&` chains, `lg compile` (fused and --no-fuse) of fns that inline
// to 32,768 nodes. Each used to end in a segfault (stack overflow); now each exits 0. The same
// programs run in-process in tests/lift/deep_programs_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_run.h"
#include "common/deep_programs.h"

namespace lg::cli_test {
namespace {

namespace fs = std::filesystem;

class DeepProgramsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lg_deep_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << test::deep_config().dump() << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  /// Writes `text` to DIR/name.lg and returns `FILE --config DIR/config.json`.
  std::string program(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / (name + ".lg")) << text;
    return (dir_ / (name + ".lg")).string() + " --config " + (dir_ / "config.json").string();
  }
  fs::path dir_;
};

TEST_F(DeepProgramsCli, ChainsOf200kTermsCheckAndLower) {
  const std::string plus = program("plus", test::chain(200'000));
  for (const std::string& cmd : {"check " + plus, "ir " + plus, "check " + program("coalesce", test::coalesce_chain(200'000)),
                                 "check " + program("and", test::and_chain(200'000))}) {
    CliRun r = run_lg(cmd + " > /dev/null");
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.out.substr(0, 2000);
  }
}

TEST_F(DeepProgramsCli, FnsInliningTo32kNodesCompileFusedAndUnfused) {
  const std::string fns = program("fns", test::fn_tower(15));
  for (const char* flags : {"", " --no-fuse"}) {
    CliRun r = run_lg("compile " + fns + flags + " -o " + (dir_ / "out").string());
    EXPECT_EQ(r.code, 0) << flags << "\n" << r.out.substr(0, 2000);
    EXPECT_TRUE(fs::exists(dir_ / "out" / "program.cu"));
  }
}

TEST_F(DeepProgramsCli, FlatChainOf1000TermsSaysNothingOfNesting) {
  CliRun r = run_lg("check " + program("flat", test::chain(1000)));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("nested too deeply"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lg::cli_test
