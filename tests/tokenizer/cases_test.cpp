// The reference cases: shared/fixtures/tokenizer/cases.json, made with HF tokenizers 0.23.2 and
// the same tokenizer.json (no special tokens added; special tokens in the text matched).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_paths.h"
#include "support/error.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

std::vector<Case> load_cases() {
  std::ifstream in(std::filesystem::path(LG_SHARED_DIR) / "fixtures/tokenizer/cases.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : j.at("cases"))
    cases.push_back({c.at("text"), c.at("ids").get<std::vector<int32_t>>(), c.at("decoded")});
  return cases;
}

TEST(TokenizerCases, EncodeGivesReferenceIds) {
  const auto cases = load_cases();
  ASSERT_EQ(cases.size(), 25u);
  for (const auto& c : cases) EXPECT_EQ(testing::qwen().encode(c.text), c.ids) << "text: " << c.text;
}

TEST(TokenizerCases, DecodeGivesReferenceText) {
  for (const auto& c : load_cases()) EXPECT_EQ(testing::qwen().decode(c.ids), c.decoded) << "text: " << c.text;
}

TEST(TokenizerCases, StreamingDecodeEqualsFullDecodeWithoutPartialCharacters) {
  for (const auto& c : load_cases()) {
    StreamDecoder stream(testing::qwen());
    std::string joined;
    for (const int32_t id : c.ids) {
      const std::string piece = stream.push(id);
      EXPECT_EQ(utf8::first_invalid(piece), std::string_view::npos) << "partial UTF-8 after id " << id;
      joined += piece;
    }
    joined += stream.finish();
    EXPECT_EQ(joined, testing::qwen().decode(c.ids)) << "text: " << c.text;
  }
}

TEST(TokenizerCases, EmojiCaseSplitsCharactersAcrossTokens) {
  // The emoji case has tokens that end inside a UTF-8 sequence (ids 101, 378, 235...): the
  // streaming property above is only meaningful if such tokens exist in the fixtures.
  const auto cases = load_cases();
  int partial = 0;
  for (const auto& c : cases)
    for (const int32_t id : c.ids)
      partial += utf8::first_invalid(*testing::qwen().token_bytes(id)) != std::string_view::npos;
  EXPECT_GT(partial, 5);
}

TEST(TokenizerVocab, SizesAndSpecialTokens) {
  const Tokenizer& t = testing::qwen();
  EXPECT_EQ(t.vocab_size(), 151669);  // 151,643 BPE tokens + 26 added; config pads to 151,936
  EXPECT_EQ(t.token_to_id("<|endoftext|>"), 151643);
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.token_to_id("Hello"), 9707);
  EXPECT_EQ(t.token_to_id("Ġ"), 220);
  EXPECT_FALSE(t.token_to_id("no such token here").has_value());
  EXPECT_EQ(t.id_to_token(220), "Ġ");
  EXPECT_EQ(t.id_to_token(151645), "<|im_end|>");
  EXPECT_FALSE(t.id_to_token(151669).has_value());
  EXPECT_FALSE(t.id_to_token(-1).has_value());
  EXPECT_TRUE(t.is_special(151643));
  EXPECT_FALSE(t.is_special(151667));  // <think> is added but not special
  EXPECT_FALSE(t.is_special(9707));
}

TEST(TokenizerVocab, IdsWithoutTokenDecodeToNothing) {
  // Rows 151669..151935 of the embedding have no token; the reference skips them.
  const std::vector<int32_t> ids = {9707, 151700, 11, -5, 1879};
  EXPECT_EQ(testing::qwen().decode(ids), "Hello, world");
  StreamDecoder stream(testing::qwen());
  EXPECT_EQ(stream.push(151935), "");
}

TEST(TokenizerEncode, InvalidUtf8IsAnErrorNamingTheByte) {
  try {
    testing::qwen().encode("abc\xFF" "def");
    FAIL() << "expected lg::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("byte 3"), std::string::npos) << e.what();
  }
}

TEST(TokenizerEncode, AddedTokensAreMatchedLongestFirstAndNonSpecialToo) {
  const Tokenizer& t = testing::qwen();
  EXPECT_EQ(t.encode("<think>"), std::vector<int32_t>{151667});
  EXPECT_EQ(t.encode("<|im_start|><|im_end|>"), (std::vector<int32_t>{151644, 151645}));
  // A broken special token is plain text.
  EXPECT_NE(t.encode("<|im_start|").size(), 1u);
}

TEST(TokenizerEncode, LongRunsDoNotExhaustTheRegexEngine) {
  const Tokenizer& t = testing::qwen();
  const std::string spaces(1 << 20, ' ');
  const auto ids = t.encode(spaces + "x");
  EXPECT_EQ(t.decode(ids), spaces + "x");
  const std::string letters(1 << 20, 'a');
  EXPECT_EQ(t.decode(t.encode(letters)), letters);
}

}  // namespace
}  // namespace lg::tokenizer

namespace lg::tokenizer {
namespace {

// 1,500 seeded random strings built to stress the edges (tests/tokenizer/make_hf_random_cases.py):
// every kind of whitespace, contractions in any case (and with U+017F, which folds to 's'),
// combining marks and jamo that NFC composes, other scripts' digits, emoji sequences, and added
// tokens next to all of these; ids and decode from HF tokenizers 0.23.2 on the GPU machine.
TEST(TokenizerHfRandomCases, EncodeAndDecodeMatchTheReference) {
  std::ifstream in(std::filesystem::path(LG_SOURCE_DIR) / "tests/tokenizer/hf_random_cases.json");
  ASSERT_TRUE(in) << "tests/tokenizer/hf_random_cases.json is missing";
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.at("cases").size(), 1500u);
  int failures = 0;
  for (const auto& c : j.at("cases")) {
    const std::string text = c.at("text");
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    const auto got = testing::qwen().encode(text);
    EXPECT_EQ(got, ids) << "text: " << nlohmann::json(text).dump();
    EXPECT_EQ(testing::qwen().decode(ids), c.at("decoded").get<std::string>()) << nlohmann::json(text).dump();
    failures += got != ids;
    ASSERT_LT(failures, 10) << "stopping after 10 mismatches";
  }
}

}  // namespace
}  // namespace lg::tokenizer
