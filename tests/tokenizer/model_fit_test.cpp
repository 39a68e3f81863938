// A tokenizer that does not fit its checkpoint is named at start-up (tokenizer/model_fit.h): one
// from a larger vocabulary (a tryout put Gemma 3's tokenizer beside a 512-id checkpoint: every
// text request was then a 400 blaming the client), and a tokenizer_config.json eos_token that is
// no token (generation silently never stopped on it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_paths.h"
#include "tokenizer/model_fit.h"

namespace lg::tokenizer {
namespace {

TEST(ModelFit, TheRealTokenizerFitsItsCheckpoint) {
  EXPECT_EQ(model_fit_warnings(testing::qwen(), testing::qwen_tokenizer_json(), 151936), std::vector<std::string>{});
  EXPECT_EQ(model_fit_warnings(testing::qwen(), testing::qwen_tokenizer_json(), 0), std::vector<std::string>{})
      << "an unknown vocab_size is not checked";
}

TEST(ModelFit, IdsPastTheModelsVocabularyAreNamed) {
  const std::vector<std::string> w = model_fit_warnings(testing::qwen(), testing::qwen_tokenizer_json(), 512);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], testing::qwen_tokenizer_json().string() +
                      ": the tokenizer has ids up to 151668, past the model's vocab_size of 512 (config.json): a "
                      "prompt whose text encodes to one of them is refused; is this tokenizer the checkpoint's own?");
  // The tokenizer's last id (151,668) itself fits a vocabulary of 151,669.
  EXPECT_TRUE(model_fit_warnings(testing::qwen(), testing::qwen_tokenizer_json(), 151669).empty());
}

TEST(ModelFit, AnEosTokenThatIsNoTokenIsNamed) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "lg_model_fit_eos";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(testing::qwen_tokenizer_json(), dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|nonexistent|>"})";
  const Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  const std::vector<std::string> w = model_fit_warnings(tok, dir / "tokenizer.json", 151936);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], (dir / "tokenizer_config.json").string() +
                      ": eos_token \"<|nonexistent|>\" is no token of tokenizer.json: generation does not stop on it "
                      "(only on the eos ids of config.json and generation_config.json)");
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|endoftext|>"})";
  EXPECT_TRUE(model_fit_warnings(Tokenizer::from_file(dir / "tokenizer.json"), dir / "tokenizer.json", 151936).empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lg::tokenizer
