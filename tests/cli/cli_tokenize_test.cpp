// `lg detokenize` reads token ids as a user types them: plain non-negative decimal integers,
// space- or comma-separated; anything else is an error naming the text (it used to take "+5"
// and " 12" for ids 5 and 12, found by a new-user pass).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.h"

namespace lg::cli_test {
namespace {


TEST(CliDetokenize, IdsArePlainDecimalIntegers) {
  const CliRun ok = run_lg("detokenize --model " + kModel + " 750 1155,25 20");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(run_lg("detokenize --model " + kModel + " 750,1155 25 20").out, ok.out) << "commas and spaces split alike";
  // The help says what is accepted: a space inside one argument is not a separator.
  const CliRun help = run_lg("detokenize --help");
  EXPECT_NE(help.out.find("separate arguments (5 12 7), or comma-separated in one (5,12,7)"), std::string::npos)
      << help.out;
  for (const std::string bad : {"+5", " 12", "12 ", "1e3", "0x1f", "5.0", "-3"}) {
    const CliRun r = run_lg("detokenize --model " + kModel + " 1,'" + bad + "'");
    EXPECT_EQ(r.code, 1) << "'" << bad << "'\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: detokenize: \"" + bad + "\" is not a token id"), std::string::npos)
        << "'" << bad << "'\n" << r.out;
  }
  // An empty item or argument was skipped, decoding less than was asked for; it names where it is.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"1,,2", "\"1,,2\" has an empty item at position 2"},
           {"1,2,", "\"1,2,\" has an empty item at position 3"},
           {",1", "\",1\" has an empty item at position 1"},
           {"1 ''", "argument 2 is empty, not a token id"},
           {"''", "argument 1 is empty, not a token id"}}) {
    const CliRun r = run_lg("detokenize --model " + kModel + " " + args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: detokenize: " + message), std::string::npos) << args << "\n" << r.out;
  }
  // A well-formed id outside the vocabulary says which ids there are.
  for (const std::string big : {"151669", "99999999999999999999999"}) {
    const CliRun r = run_lg("detokenize --model " + kModel + " " + big);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("lg: error: detokenize: id " + big + " has no token (the tokenizer has ids 0..151668; a model's LM "
                         "head may have more rows"),
              std::string::npos)
        << r.out;
  }
}

// --skip-special-tokens leaves out the tokens tokenizer.json marks special, as lg run and lg serve
// show generated text; without it they are shown, as HF's decode(ids) (skip_special_tokens=False).
TEST(CliDetokenize, SkipSpecialTokensLeavesThemOut) {
  const std::string ids = " 151643 750 151644 1155";  // <|endoftext|> def <|im_start|> (t
  const CliRun shown = run_lg("detokenize --model " + kModel + ids);
  EXPECT_EQ(shown.code, 0) << shown.out;
  EXPECT_EQ(shown.out, "<|endoftext|>def<|im_start|>(t\n");
  const CliRun skipped = run_lg("detokenize --skip-special-tokens --model " + kModel + ids);
  EXPECT_EQ(skipped.code, 0) << skipped.out;
  EXPECT_EQ(skipped.out, "def(t\n");
  // --no-newline: the text alone, byte for byte.
  const CliRun bare = run_lg("detokenize --no-newline --skip-special-tokens --model " + kModel + ids);
  EXPECT_EQ(bare.code, 0) << bare.out;
  EXPECT_EQ(bare.out, "def(t");
  const CliRun help = run_lg("detokenize --help");
  EXPECT_NE(help.out.find("--skip-special-tokens"), std::string::npos) << help.out;
}

// `lg tokenize` prints a row per token: id, token, and its text with newlines, tabs and
// backslashes escaped (a newline token printed raw split its row in two; new-user pass, session 22).
TEST(CliTokenize, EachTokenIsOneRowWithItsTextEscaped) {
  const CliRun r = run_lg("tokenize --model " + kModel + " -", "printf 'a\\tb\\nc\\\\d' | ");
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> rows;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) rows.push_back(r.out.substr(at, nl - at));
  ASSERT_GE(rows.size(), 2u) << r.out;
  const std::string last = rows.back();
  rows.pop_back();
  EXPECT_EQ(last, std::to_string(rows.size()) + (rows.size() == 1 ? " token" : " tokens")) << r.out;
  std::string text;
  for (const std::string& row : rows) {
    const size_t t1 = row.find('\t'), t2 = row.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << row;
    EXPECT_EQ(row.find('\t', t2 + 1), std::string::npos) << "three columns: " << row;
    text += row.substr(t2 + 1);
  }
  EXPECT_EQ(text, "a\\tb\\nc\\\\d") << r.out;
}

// A model directory whose tokenizer.json, config.json or tokenizer_config.json is a directory:
// named so (an "internal error" from the stream, "malformed JSON: unexpected end of input", a
// tokenizer_config.json skipped in lg run but refused by lg template: a new-user pass).
TEST(CliTokenize, ModelFilesThatAreDirectoriesAreNamedSo) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "lg_model_file_dirs";
  fs::remove_all(root);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tokenizer.json", "tokenizer.json: is a directory, not a tokenizer.json file"},
      {"config.json", "config.json: is a directory, not a JSON file"},
      {"tokenizer_config.json", "tokenizer_config.json: not a regular file, not a tokenizer_config.json"},
  };
  for (const auto& [file, message] : cases) {
    const fs::path dir = root / file;
    fs::create_directories(dir);
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"})
      if (file != f) fs::copy_file(fs::path(kModel) / f, dir / f);
    fs::create_directories(dir / file);
    const std::string cmd = (file == "config.json" ? "run --lane cpu -n 1 --prompt hi --model " : "tokenize --model ") +
                            dir.string() + (file == "config.json" ? "" : " hi");
    const CliRun r = run_lg(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: " + (dir / message).string()), std::string::npos) << cmd << "\n" << r.out;
  }
  fs::remove_all(root);
}

// A tokenizer.json or model.safetensors that is a Git LFS pointer (a repository cloned without Git
// LFS) is named as one, with what to do: lg tokenize said "not valid JSON (byte 1)", lg run "not a
// safetensors file or corrupt" (a new-user pass).
TEST(CliTokenize, GitLfsPointersAreNamedSo) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "lg_git_lfs_pointers";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "tokenizer_config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(fs::path(kModel) / f, dir / f);
  const std::string pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + std::string(64, 'a') +
                              "\nsize 11422654\n";
  std::ofstream(dir / "tokenizer.json", std::ios::binary) << pointer;
  const std::string says = ": a Git LFS pointer (" + std::to_string(pointer.size()) +
                           " bytes), not the file it stands for: the model repository was cloned without Git LFS";
  const CliRun tok = run_lg("tokenize --model " + dir.string() + " hi");
  EXPECT_EQ(tok.code, 1) << tok.out;
  EXPECT_NE(tok.out.find("lg: error: " + (dir / "tokenizer.json").string() + says), std::string::npos) << tok.out;
  std::ofstream(dir / "model.safetensors", std::ios::binary | std::ios::trunc) << pointer;
  const CliRun run = run_lg("run --lane cpu -n 1 --prompt-ids 5 --model " + dir.string());
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find("lg: error: " + (dir / "model.safetensors").string() + says), std::string::npos) << run.out;
  fs::remove_all(dir);
}

// -m naming a file, a missing folder, or a folder without tokenizer.json: each says which.
TEST(CliTokenize, ModelPathErrorsSayWhatIsMissing) {
  const std::string missing = ::testing::TempDir() + "lg_tokenize_no_such_dir";
  const std::string empty = ::testing::TempDir() + "lg_tokenize_empty_dir";
  std::filesystem::create_directories(empty);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {missing, missing + ": not a model directory (no such directory; -m names the folder holding tokenizer.json)"},
      {kModel + "/config.json", kModel + "/config.json: not a model directory (a file;"},
      {empty, empty + "/tokenizer.json: no such file"},
  };
  for (const auto& [dir, message] : cases)
    for (const std::string& cmd : {"tokenize --model " + dir + " hi", "detokenize --model " + dir + " 5"}) {
      const CliRun r = run_lg(cmd);
      EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
      EXPECT_NE(r.out.find("lg: error: " + message), std::string::npos) << cmd << "\n" << r.out;
    }
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace lg::cli_test
