// tokenizer.json files of kinds lanegraph does not implement are refused with an lg::Error that
// names the file and the field, instead of tokenizing wrongly. Built from a small valid file.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace lg::tokenizer {
namespace {

using nlohmann::json;

// A minimal Qwen-shaped tokenizer: the 256 byte tokens, merges "h e", "he l", "l o" and one
// special token.
json small_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::from_bytes(std::string(1, static_cast<char>(b)))] = b;
  vocab["he"] = 256;
  vocab["hel"] = 257;
  vocab["lo"] = 258;
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = json::array({{{"id", 259}, {"content", "<|end|>"}, {"single_word", false},
                                    {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                                    {"special", true}}});
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+|\\s+|[^\\s\\p{L}]+"}}},
                     {"behavior", "Isolated"}, {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                     {"use_regex", false}}})}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
                {"ignore_merges", false}, {"vocab", vocab},
                {"merges", json::array({json::array({"h", "e"}), "he l", json::array({"l", "o"})})}};
  return j;
}

std::filesystem::path write_temp(const std::string& text) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lg_tokenizer_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / ("tokenizer" + std::to_string(counter++) + ".json");
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Loads the small tokenizer after `mutate`, expecting an lg::Error whose message names the file
// and contains `field`.
void expect_refused(const std::function<void(json&)>& mutate, const std::string& field) {
  json j = small_tokenizer();
  mutate(j);
  const auto path = write_temp(j.dump());
  try {
    Tokenizer::from_file(path);
    ADD_FAILURE() << "accepted a tokenizer.json with a bad " << field;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
}

TEST(TokenizerJson, SmallValidTokenizerWorks) {
  const auto t = Tokenizer::from_file(write_temp(small_tokenizer().dump()));
  EXPECT_EQ(t.encode("hello<|end|> lo"), (std::vector<int32_t>{257, 258, 259, ' ', 258}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{257, 258, 259}), "hello<|end|>");
  EXPECT_EQ(t.vocab_size(), 260);
}

TEST(TokenizerJson, UnsupportedKindsNameTheirField) {
  expect_refused([](json& j) { j["model"]["type"] = "WordPiece"; }, "model.type");
  expect_refused([](json& j) { j.erase("model"); }, "model");
  expect_refused([](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout");
  expect_refused([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }, "model.continuing_subword_prefix");
  expect_refused([](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback");
  expect_refused([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }, "normalizer.type");
  expect_refused([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "pre_tokenizer.type");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; },
                 "pre_tokenizer.pretokenizers[0].behavior");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Glob", " "}}; },
                 "pre_tokenizer.pretokenizers[0].pattern");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", ""}}; },
                 "pre_tokenizer.pretokenizers[0].pattern.String");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["invert"] = "yes"; },
                 "pre_tokenizer.pretokenizers[0].invert");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = 1; },
                 "pre_tokenizer.pretokenizers[1].add_prefix_space");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["type"] = "Punctuation"; },
                 "pre_tokenizer.pretokenizers[1].type");
  // The text is in the byte-level alphabet after ByteLevel, which lanegraph never builds.
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"].push_back({{"type", "Digits"}}); },
                 "pre_tokenizer.pretokenizers[2].type");
  expect_refused([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}}; },
                 "pre_tokenizer.replacement");
  expect_refused([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "often"}}; },
                 "pre_tokenizer.prepend_scheme");
  expect_refused([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, "decoder.type");
  expect_refused([](json& j) { j["decoder"] = nullptr; }, "decoder");
  // After Fuse the text streams as one token: ByteFallback would need all of it.
  expect_refused([](json& j) {
    j["decoder"] = {{"type", "Sequence"}, {"decoders", json::array({{{"type", "Fuse"}}, {{"type", "ByteFallback"}}})}};
  }, "decoder.decoders[1].type");
  expect_refused([](json& j) { j["decoder"] = {{"type", "Strip"}, {"content", "  "}, {"start", 1}, {"stop", 0}}; },
                 "decoder.content");
  expect_refused([](json& j) { j["post_processor"] = {{"type", "ClsPostProcessor"}}; }, "post_processor.type");
  expect_refused([](json& j) { j["post_processor"] = {{"type", "TemplateProcessing"}}; }, "post_processor.single");
  expect_refused([](json& j) {
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                           {"special_tokens", json::object()}};
  }, "post_processor.single[0].SpecialToken.id");
  expect_refused([](json& j) {
    j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array()}, {"special_tokens", json::object()}};
  }, "post_processor.single");
}

TEST(TokenizerJson, MalformedEntriesNameTheirField) {
  expect_refused([](json& j) { j["model"]["merges"][1] = "he l o"; }, "model.merges[1]");
  expect_refused([](json& j) { j["model"]["merges"][2] = json::array({"l", "zz"}); }, "model.merges[2]");
  expect_refused([](json& j) { j["model"]["merges"][0] = 7; }, "model.merges[0]");
  expect_refused([](json& j) { j["model"]["vocab"].erase("a"); }, "model.vocab");
  expect_refused([](json& j) { j["model"]["vocab"]["he"] = "x"; }, "model.vocab[\"he\"]");
  // Two tokens of one id (the first lost it, and the load failed later: "no token for byte ...").
  expect_refused([](json& j) { j["model"]["vocab"]["zz"] = j["model"]["vocab"]["he"]; },
                 "model.vocab[\"zz\"]: id " );
  expect_refused([](json& j) { j["model"]["vocab"]["zz"] = j["model"]["vocab"]["he"]; },
                 " is model.vocab[\"he\"]'s too");
  expect_refused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L}"; },
                 "pre_tokenizer.pretokenizers[0].pattern.Regex");
  expect_refused([](json& j) { j["added_tokens"][0].erase("id"); }, "added_tokens[0].id");
  expect_refused([](json& j) { j["added_tokens"][0]["content"] = ""; }, "added_tokens[0].content");
  expect_refused([](json& j) { j["added_tokens"][0]["special"] = "yes"; }, "added_tokens[0].special");
}

TEST(TokenizerJson, UnreadableFilesAreErrors) {
  const auto missing = std::filesystem::temp_directory_path() / "lg_no_such_dir/tokenizer.json";
  EXPECT_THROW(Tokenizer::from_file(missing), Error);
  try {
    Tokenizer::from_file(write_temp("{\"model\": "));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON (byte 11): parse error at line 1, column 11"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();  // nlohmann's id
  }
}

// tokenizer_config.json is read with the limit of every small JSON file: 100,000 nested arrays as
// its eos_token overflowed the stack printing the value into the error (lg run, lg serve).
TEST(TokenizerConfig, NestingPastTheLimitIsAnErrorNamingTheFile) {
  const auto tokenizer = write_temp(small_tokenizer().dump());
  const auto config = write_temp(R"({"eos_token": )" + std::string(100000, '[') + std::string(100000, ']') + "}");
  try {
    Tokenizer::from_files(tokenizer, config);
    FAIL() << "accepted a tokenizer_config.json nested 100,000 levels deep";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), config.string() + ": the JSON is nested more than 10000 levels deep");
  }
}

TEST(TokenizerJson, AddedTokenFlags) {
  json j = small_tokenizer();
  j["added_tokens"].push_back({{"id", 260}, {"content", "[W]"}, {"single_word", true}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", false}, {"special", false}});
  j["added_tokens"].push_back({{"id", 261}, {"content", "[S]"}, {"single_word", false}, {"lstrip", true},
                               {"rstrip", true}, {"normalized", false}, {"special", true}});
  const auto t = Tokenizer::from_file(write_temp(j.dump()));
  // single_word: inside a word it is plain text.
  EXPECT_EQ(t.encode("[W]"), std::vector<int32_t>{260});
  EXPECT_EQ(t.encode("a [W] b").at(2), 260);
  const auto inside = t.encode("a[W]b");
  EXPECT_EQ(std::count(inside.begin(), inside.end(), 260), 0);
  // Word characters are the Rust regex \w's (the reference's test): a combining mark is one
  // (U+0301 after "e"), a superscript digit (U+00B2, category No) and U+2019 are not.
  const auto after_mark = t.encode("e\u0301[W]");
  EXPECT_EQ(std::count(after_mark.begin(), after_mark.end(), 260), 0);
  EXPECT_EQ(t.encode("x\u00b2[W]").back(), 260);
  EXPECT_EQ(t.encode("[W]\u2019s").front(), 260);
  const auto before_joiner = t.encode("[W]\u200d");
  EXPECT_EQ(std::count(before_joiner.begin(), before_joiner.end(), 260), 0);
  // lstrip/rstrip: the whitespace around goes into the token.
  EXPECT_EQ(t.encode("lo  [S]  lo"), (std::vector<int32_t>{258, 261, 258}));
  EXPECT_TRUE(t.is_special(261));
  EXPECT_FALSE(t.is_special(260));
}

// Hugging Face tokenizers (0.23) does not take the `id` of an added token from the file: it adds
// the tokens in file order, a content already added or in the vocabulary keeping that id and any
// other taking the vocabulary's size (259 entries here) or one past the largest id added so far;
// the file's id is only compared, and a differing one logged as a warning. lanegraph took the
// file's ids as written, so a hand-edited file tokenized to other ids than HF's (and an id
// inside the vocabulary made two texts share it). Expected ids worked out from HF's rule.
TEST(TokenizerJson, AddedTokenIdsAreNumberedAsHfNumbersThemNotAsWritten) {
  json j = small_tokenizer();  // vocabulary 0..258; "<|end|>" 259, as written
  auto token = [](int64_t id, const std::string& content, bool special) {
    return json{{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
                {"rstrip", false},   {"normalized", false}, {"special", special}};
  };
  j["added_tokens"].push_back(token(300, "[A]", false));     // a gap: HF gives it 260
  j["added_tokens"].push_back(token(400, "lo", false));      // in the vocabulary: its id, 258
  j["added_tokens"].push_back(token(5, "[B]", true));        // a byte token's id: HF gives it 261
  j["added_tokens"].push_back(token(262, "<|end|>", true));  // again: keeps 259
  const auto t = Tokenizer::from_file(write_temp(j.dump()));
  EXPECT_EQ(t.token_to_id("[A]"), 260);
  EXPECT_EQ(t.token_to_id("lo"), 258);
  EXPECT_EQ(t.token_to_id("[B]"), 261);
  EXPECT_EQ(t.token_to_id("<|end|>"), 259);
  EXPECT_EQ(t.encode("[A]lo[B]<|end|>"), (std::vector<int32_t>{260, 258, 261, 259}));
  EXPECT_EQ(t.id_to_token(5), byte_level::from_bytes(std::string(1, '\x05')));  // the byte token keeps its id
  EXPECT_EQ(t.decode(std::vector<int32_t>{5}), std::string(1, '\x05'));
  EXPECT_FALSE(t.id_to_token(300).has_value());
  EXPECT_FALSE(t.id_to_token(262).has_value());
  EXPECT_TRUE(t.is_special(261));
  EXPECT_FALSE(t.is_special(260));
  // A file whose ids agree with that numbering (as transformers writes them) is read as before.
  const auto agreed = Tokenizer::from_file(write_temp(small_tokenizer().dump()));
  EXPECT_EQ(agreed.token_to_id("<|end|>"), 259);
}

}  // namespace
}  // namespace lg::tokenizer
