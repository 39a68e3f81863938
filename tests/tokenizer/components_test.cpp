// The tokenizer.json components of SentencePiece-style tokenizers and the pre-tokenizer
// behaviors, on small hand-made files whose expected ids follow HF tokenizers' definitions
// (models/bpe merge_word, normalizers, pre_tokenizers/metaspace and split, decoders, processors):
// the edges the real files' cases may not reach (unk fusing and its order against byte
// fallback, prepend_scheme "first", Strip at the end of a stream, tokenizer_config.json's flags).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "support/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace lg::tokenizer {
namespace {

using nlohmann::json;

const std::string kMeta = "\xE2\x96\x81";  // ▁

// Llama 2's layout: Prepend + Replace normalizers, no pre-tokenizer, byte fallback, unk fused,
// decoder Replace, ByteFallback, Fuse, Strip; <s> added by the post-processor.
json sp_tokenizer() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"<0x0A>", 3}, {"<0xC3>", 4}, {kMeta, 5}, {"a", 6},
                {"b", 7}, {"c", 8}, {"ab", 9}, {kMeta + "a", 10}, {kMeta + "ab", 11}, {"x", 12}};
  json j;
  j["added_tokens"] = json::array();
  for (const auto& [content, id] : {std::pair{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}})
    j["added_tokens"].push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                 {"rstrip", false}, {"normalized", false}, {"special", true}});
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", kMeta}},
                                                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}}})}};
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}},
                                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"vocab", vocab},
                {"merges", json::array({"a b", kMeta + " a", kMeta + "a b"})}};
  return j;
}

Tokenizer load(const json& j) { return Tokenizer::from_json_text(j.dump(), "test.json"); }
using Ids = std::vector<int32_t>;

TEST(SentencePieceBpe, CharactersThenByteFallbackThenUnk) {
  const Tokenizer t = load(sp_tokenizer());
  EXPECT_EQ(t.encode("a b"), (Ids{10, 5, 7}));  // "▁a▁b": (▁,a) merges, nothing joins "▁b"
  EXPECT_EQ(t.encode("ab"), (Ids{5, 9}));       // "a b" outranks "▁ a", so "▁ab" is never reached
  EXPECT_EQ(t.encode("\n"), (Ids{5, 3}));       // not in the vocab: its byte's token
  EXPECT_EQ(t.encode("\xC3\xA9"), (Ids{5, 0}));  // é: <0xC3> exists but <0xA9> does not -> unk
  EXPECT_EQ(t.encode("\xC3\xA9\xC3\xA9"), (Ids{5, 0}));  // consecutive unknowns fuse
  // HF adds byte-fallback tokens before an unk still pending from earlier characters.
  EXPECT_EQ(t.encode("d\n\xC3\xA9"), (Ids{5, 3, 0}));
  EXPECT_EQ(t.encode(""), Ids{});
  EXPECT_EQ(t.encode(" "), (Ids{5, 5}));
  // The normalizer runs per segment between added tokens: "<s>" then "▁a".
  EXPECT_EQ(t.encode("<s>a"), (Ids{1, 10}));
  EXPECT_EQ(t.encode_with_special_tokens("a"), (Ids{1, 10}));
}

TEST(SentencePieceBpe, UnfusedUnkAndIgnoreMerges) {
  json j = sp_tokenizer();
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(j).encode("\xC3\xA9\xC3\xA9"), (Ids{5, 0, 0}));
  EXPECT_EQ(load(j).encode("d\n\xC3\xA9"), (Ids{5, 3, 0, 0}));
  j["model"]["unk_token"] = nullptr;  // no unk token: the reference drops the character
  EXPECT_EQ(load(j).encode("d\na"), (Ids{5, 3, 6}));
  j = sp_tokenizer();
  j["model"]["ignore_merges"] = true;  // a pre-token that is a token stays whole
  EXPECT_EQ(load(j).encode("ab"), Ids{11});
  j["model"]["unk_token"] = "<nope>";
  EXPECT_THROW(load(j), Error);
}

TEST(SentencePieceBpe, DecoderChainAndItsStream) {
  const Tokenizer t = load(sp_tokenizer());
  EXPECT_EQ(t.decode(Ids{10, 5, 7}), "a b");  // " a b" with the first space stripped
  EXPECT_EQ(t.decode(Ids{5, 3}), "\n");
  EXPECT_EQ(t.decode(Ids{1, 10}), "<s> a");  // the strip sees "<s>" first
  EXPECT_EQ(t.decode(Ids{5, 5, 6}), " a");
  StreamDecoder s(t);
  EXPECT_EQ(s.push(5), "");  // the text's first space is stripped
  EXPECT_EQ(s.push(5), " ");
  EXPECT_EQ(s.push(4), "");  // a byte run waits for its end
  EXPECT_EQ(s.push(6), "\xEF\xBF\xBD" "a");  // 0xC3 alone is not UTF-8: U+FFFD
  EXPECT_EQ(s.finish(), "");
}

TEST(SentencePieceBpe, StripAtTheEndOfAStream) {
  json j = sp_tokenizer();
  j["decoder"]["decoders"][3]["start"] = 0;
  j["decoder"]["decoders"][3]["stop"] = 1;
  const Tokenizer t = load(j);
  EXPECT_EQ(t.decode(Ids{6, 5}), "a");
  EXPECT_EQ(t.decode(Ids{6, 5, 5}), "a ");
  EXPECT_EQ(t.decode(Ids{5, 6}), " a");
  StreamDecoder s(t);
  EXPECT_EQ(s.push(6), "a");
  EXPECT_EQ(s.push(5), "");  // may be the last character
  EXPECT_EQ(s.push(5), " ");
  EXPECT_EQ(s.push(6), " a");
  EXPECT_EQ(s.push(5), "");
  EXPECT_EQ(s.finish(), "");
}

// Mistral v0.3's layout: a Metaspace pre-tokenizer and decoder, no normalizer.
json metaspace_tokenizer(const std::string& scheme) {
  json j = sp_tokenizer();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", scheme}, {"split", false}};
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", scheme}, {"split", false}};
  return j;
}

TEST(Metaspace, PrependSchemes) {
  const Tokenizer first = load(metaspace_tokenizer("first"));
  EXPECT_EQ(first.encode("a b"), (Ids{10, 5, 7}));
  EXPECT_EQ(first.encode(" a"), (Ids{10}));       // already starts with the replacement
  EXPECT_EQ(first.encode("<s>a b"), (Ids{1, 6, 5, 7}));  // "a b" does not start the input
  EXPECT_EQ(load(metaspace_tokenizer("always")).encode("<s>a b"), (Ids{1, 10, 5, 7}));
  EXPECT_EQ(load(metaspace_tokenizer("never")).encode("a b"), (Ids{6, 5, 7}));
  // The decoder drops the replacement in the first token unless the scheme is "never".
  EXPECT_EQ(first.decode(Ids{10, 5, 7}), "a b");
  EXPECT_EQ(first.decode(Ids{5, 5, 6}), " a");
  EXPECT_EQ(load(metaspace_tokenizer("never")).decode(Ids{10, 5, 7}), " a b");
  json old = metaspace_tokenizer("always");  // older files: add_prefix_space instead of a scheme
  old["pre_tokenizer"].erase("prepend_scheme");
  old["pre_tokenizer"]["add_prefix_space"] = false;
  EXPECT_EQ(load(old).encode("a b"), (Ids{6, 5, 7}));
}

std::vector<std::string> pre_tokens(const json& pre, std::string_view text, bool at_start = true) {
  const JsonFields fields("test.json");
  const PreTokenizer p = PreTokenizer::from_json(pre, fields);
  std::vector<PreToken> out;
  std::deque<std::string> arena;
  p.split(text, at_start, out, arena);
  std::vector<std::string> s;
  for (const auto& t : out) s.emplace_back(t.text);
  return s;
}

using Strs = std::vector<std::string>;

TEST(PreTokenizers, SplitBehaviors) {
  auto split = [](const char* behavior, bool invert = false) {
    return pre_tokens({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}},
                      "a-b--c-");
  };
  EXPECT_EQ(split("Isolated"), (Strs{"a", "-", "b", "-", "-", "c", "-"}));
  EXPECT_EQ(split("Removed"), (Strs{"a", "b", "c"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Strs{"a-", "b-", "-", "c-"}));
  EXPECT_EQ(split("MergedWithNext"), (Strs{"a", "-b", "-", "-c", "-"}));
  EXPECT_EQ(split("Contiguous"), (Strs{"a", "-", "b", "--", "c", "-"}));
  EXPECT_EQ(split("Removed", true), (Strs{"-", "-", "-", "-"}));
  // An empty regex match still cuts (Oniguruma's find_iter keeps it).
  EXPECT_EQ(pre_tokens({{"type", "Split"}, {"pattern", {{"Regex", "(?=x)"}}}, {"behavior", "Isolated"}}, "axbx"),
            (Strs{"a", "xb", "x"}));
}

TEST(PreTokenizers, MetaspaceDigitsByteLevel) {
  EXPECT_EQ(pre_tokens({{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "always"}}, "a  b"),
            (Strs{kMeta + "a", kMeta, kMeta + "b"}));
  EXPECT_EQ(pre_tokens({{"type", "Digits"}, {"individual_digits", true}}, "a12b3"), (Strs{"a", "1", "2", "b", "3"}));
  EXPECT_EQ(pre_tokens({{"type", "Digits"}, {"individual_digits", false}}, "a12b3"), (Strs{"a", "12", "b", "3"}));
  // GPT-2: a prefix space, then its pattern.
  EXPECT_EQ(pre_tokens({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}, "hello world's"),
            (Strs{" hello", " world", "'s"}));
}

TEST(Normalizers, RegexReplace) {
  json j = sp_tokenizer();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", kMeta}};
  EXPECT_EQ(load(j).encode("a   b"), (Ids{6, 5, 7}));
}

// tokenizer_config.json's add_bos_token / add_eos_token replace the post-processor's choice.
TEST(TokenizerConfig, FlagsDecideTheSpecialTokens) {
  const auto dir = std::filesystem::temp_directory_path() / ("lg_tokenizer_config_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << sp_tokenizer().dump();
  auto with_config = [&](const json& config) {
    std::ofstream(dir / "tokenizer_config.json") << config.dump();
    return Tokenizer::from_file(dir / "tokenizer.json");
  };
  EXPECT_EQ(with_config({{"add_bos_token", true}, {"add_eos_token", true}, {"bos_token", "<s>"},
                         {"eos_token", {{"content", "</s>"}, {"__type", "AddedToken"}}}})
                .encode_with_special_tokens("a"),
            (Ids{1, 10, 2}));
  // Only add_eos_token given: add_bos_token counts as false, whatever the post-processor says.
  const Tokenizer eos_only = with_config({{"add_eos_token", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}});
  EXPECT_EQ(eos_only.encode_with_special_tokens("a"), (Ids{10, 2}));
  EXPECT_EQ(eos_only.bos_id(), 1);
  // Neither flag: the post-processor decides.
  EXPECT_EQ(with_config({{"bos_token", nullptr}}).encode_with_special_tokens("a"), (Ids{1, 10}));
  EXPECT_FALSE(with_config({{"bos_token", nullptr}}).bos_token().has_value());
  try {
    with_config({{"add_bos_token", true}, {"bos_token", "<bos>"}});
    ADD_FAILURE() << "accepted a bos_token that is no token";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: bos_token"), std::string::npos) << e.what();
  }
  EXPECT_THROW(with_config({{"add_bos_token", "yes"}}), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lg::tokenizer
