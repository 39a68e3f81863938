// The real tokenizers of the new families against Hugging Face tokenizers 0.23.2:
// shared/fixtures/tokenizers/{llama3.1,gemma3,sentencepiece-bpe-32k}/cases.json hold texts, the
// ids of encode(text, add_special_tokens=False) and the decode of those ids. Llama 3.1 is
// byte-level BPE with a Sequence post-processor; Gemma 3 and the 32k tokenizer (Mistral 7B's
// vocabulary, LlamaTokenizer's layout) are SentencePiece-style BPE with byte fallback.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

std::filesystem::path family_dir(const std::string& name) {
  return std::filesystem::path(LG_SHARED_DIR) / "fixtures/tokenizers" / name;
}

const Tokenizer& family(const std::string& name) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    it = loaded.emplace(name, Tokenizer::from_file(family_dir(name) / "tokenizer.json")).first;
    std::printf("[ loaded   ] %s in %.2f s\n", name.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return it->second;
}

struct FamilyCase {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

std::vector<FamilyCase> cases(const std::string& name) {
  std::ifstream in(family_dir(name) / "cases.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<FamilyCase> out;
  for (const auto& c : j.at("cases")) out.push_back({c.at("text"), c.at("ids").get<std::vector<int32_t>>(), c.at("decoded")});
  return out;
}

class Family : public ::testing::TestWithParam<std::string> {};

TEST_P(Family, EncodeGivesReferenceIds) {
  const auto all = cases(GetParam());
  ASSERT_EQ(all.size(), 40u);
  for (const auto& c : all) EXPECT_EQ(family(GetParam()).encode(c.text), c.ids) << "text: " << nlohmann::json(c.text).dump();
}

TEST_P(Family, DecodeGivesReferenceText) {
  for (const auto& c : cases(GetParam()))
    EXPECT_EQ(family(GetParam()).decode(c.ids), c.decoded) << "text: " << nlohmann::json(c.text).dump();
}

TEST_P(Family, StreamingDecodeEqualsFullDecode) {
  const Tokenizer& t = family(GetParam());
  for (const auto& c : cases(GetParam())) {
    StreamDecoder stream(t);
    std::string joined;
    for (const int32_t id : c.ids) {
      const std::string piece = stream.push(id);
      EXPECT_EQ(utf8::first_invalid(piece), std::string_view::npos) << "partial UTF-8 after id " << id;
      joined += piece;
    }
    joined += stream.finish();
    EXPECT_EQ(joined, c.decoded) << "text: " << nlohmann::json(c.text).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Family, ::testing::Values("llama3.1", "gemma3", "sentencepiece-bpe-32k"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// encode_with_special_tokens: Llama 3.1 takes <|begin_of_text|> from its post-processor
// (tokenizer_config.json has no add_bos_token); Gemma 3 and the 32k tokenizer from
// tokenizer_config.json's add_bos_token (their post-processors agree).
TEST(FamilySpecialTokens, BosComesFirst) {
  EXPECT_EQ(family("llama3.1").encode_with_special_tokens("Hello, world!"),
            (std::vector<int32_t>{128000, 9906, 11, 1917, 0}));
  EXPECT_EQ(family("gemma3").encode_with_special_tokens("Hello, world!"),
            (std::vector<int32_t>{2, 9259, 236764, 1902, 236888}));
  EXPECT_EQ(family("sentencepiece-bpe-32k").encode_with_special_tokens("Hello, world!"),
            (std::vector<int32_t>{1, 22557, 28725, 1526, 28808}));
  EXPECT_EQ(family("llama3.1").encode_with_special_tokens(""), std::vector<int32_t>{128000});
}

TEST(FamilySpecialTokens, BosAndEosFromTokenizerConfig) {
  EXPECT_EQ(family("llama3.1").bos_token(), "<|begin_of_text|>");
  EXPECT_EQ(family("llama3.1").eos_token(), "<|eot_id|>");
  EXPECT_EQ(family("llama3.1").bos_id(), 128000);
  EXPECT_EQ(family("llama3.1").eos_id(), 128009);
  EXPECT_EQ(family("gemma3").bos_id(), 2);
  EXPECT_EQ(family("gemma3").eos_id(), 106);  // <end_of_turn>
  EXPECT_EQ(family("sentencepiece-bpe-32k").bos_id(), 1);
  EXPECT_EQ(family("sentencepiece-bpe-32k").eos_id(), 2);
}

TEST(FamilyVocab, SizesAndTokenForms) {
  EXPECT_EQ(family("llama3.1").vocab_size(), 128256);
  EXPECT_EQ(family("gemma3").vocab_size(), 262145);  // 262,144 BPE ids + <image_soft_token>
  EXPECT_EQ(family("sentencepiece-bpe-32k").vocab_size(), 32000);
  const Tokenizer& sp = family("sentencepiece-bpe-32k");
  EXPECT_EQ(sp.token_to_id("<0x0A>"), 13);
  EXPECT_EQ(sp.token_bytes(13), "\n");           // a byte-fallback token stands for its byte
  EXPECT_EQ(sp.token_bytes(*sp.token_to_id("▁the")), " the");
  EXPECT_TRUE(sp.is_special(1));
}

// Byte fallback in decode: a run of byte tokens that is valid UTF-8 as a whole becomes its text;
// otherwise every byte of the run becomes U+FFFD (HF's ByteFallback, unlike from_utf8_lossy).
TEST(FamilyDecode, ByteFallbackRunsAreAllOrNothing) {
  const Tokenizer& sp = family("sentencepiece-bpe-32k");
  auto byte = [&](int b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    return *sp.token_to_id(name);
  };
  const std::string R(utf8::kReplacement);
  const int32_t hello = *sp.token_to_id("▁Hello");
  EXPECT_EQ(sp.decode(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD), byte(0xA0)}), "Hello\xE4\xBD\xA0");
  EXPECT_EQ(sp.decode(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD), byte(0xA0), byte(0xFF)}), "Hello" + R + R + R + R);
  EXPECT_EQ(sp.decode(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD), hello}), "Hello" + R + R + " Hello");
  // Strip(" ", 1, 0) after Fuse: only the text's first space goes.
  EXPECT_EQ(sp.decode(std::vector<int32_t>{hello, hello}), "Hello Hello");
  StreamDecoder stream(sp);
  EXPECT_EQ(stream.push(hello), "Hello");
  EXPECT_EQ(stream.push(byte(0xE4)), "");  // a run of bytes is held until it ends
  EXPECT_EQ(stream.push(byte(0xBD)), "");
  EXPECT_EQ(stream.push(byte(0xA0)), "");
  EXPECT_EQ(stream.push(hello), "\xE4\xBD\xA0 Hello");
  EXPECT_EQ(stream.finish(), "");
}

// A prompt that ends in a run of byte tokens (a character outside the vocabulary, "你"): the
// primed stream held the run, as it holds every run until a non-byte token, so the prompt's "你"
// came out as the completion's first text (lg serve answered "你 Hello" for a generated "▁Hello").
// A run that is not yet a whole character stays held: the next byte tokens may complete it.
TEST(FamilyDecode, PrimedStreamKeepsThePromptsTrailingBytesOutOfTheCompletion) {
  const Tokenizer& sp = family("sentencepiece-bpe-32k");
  auto byte = [&](int b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    return *sp.token_to_id(name);
  };
  const int32_t hello = *sp.token_to_id("▁Hello");
  StreamDecoder stream(sp);
  stream.prime(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD), byte(0xA0)});
  EXPECT_EQ(stream.push(hello), " Hello");
  EXPECT_EQ(stream.finish(), "");
  StreamDecoder bytes_after(sp);
  bytes_after.prime(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD), byte(0xA0)});
  EXPECT_EQ(bytes_after.push(byte(0xE5)), "");  // "好" in bytes
  EXPECT_EQ(bytes_after.push(byte(0xA5)), "");
  EXPECT_EQ(bytes_after.push(byte(0xBD)), "");
  EXPECT_EQ(bytes_after.finish(), "\xE5\xA5\xBD");
  StreamDecoder split(sp);
  split.prime(std::vector<int32_t>{hello, byte(0xE4), byte(0xBD)});
  EXPECT_EQ(split.push(byte(0xA0)), "");
  EXPECT_EQ(split.push(hello), "\xE4\xBD\xA0 Hello");
}

// skip_special_tokens leaves a special token out before the decoder runs, as HF does: Llama 2's
// "<s>" then no longer starts the text, so Strip takes the space of the "▁Hello" after it (HF:
// decode([1, 15043]) is "<s> Hello", with skip_special_tokens=True "Hello"); a primed stream skips
// the prompt's "<s>" too and gives the same text.
TEST(FamilyDecode, SkippedSpecialTokensAreLeftOutBeforeTheDecoder) {
  const Tokenizer& sp = family("sentencepiece-bpe-32k");
  const int32_t bos = *sp.token_to_id("<s>"), hello = *sp.token_to_id("▁Hello");
  ASSERT_TRUE(sp.is_special(bos));
  const std::vector<int32_t> ids = {bos, hello, bos, hello};
  EXPECT_EQ(sp.decode(ids), "<s> Hello<s> Hello");
  EXPECT_EQ(sp.decode(ids, /*skip_special_tokens=*/true), "Hello Hello");
  StreamDecoder stream(sp, /*skip_special_tokens=*/true);
  stream.prime(std::vector<int32_t>{bos});
  std::string text;
  for (size_t i = 1; i < ids.size(); ++i) text += stream.push(ids[i]);
  EXPECT_EQ(text + stream.finish(), "Hello Hello");
}

// Generation decodes the new ids after the prompt's: with a SentencePiece decoder the first
// generated "▁Paris" is " Paris" there, "Paris" at the start of a text (Strip / Metaspace).
TEST(FamilyDecode, PrimedStreamContinuesThePrompt) {
  for (const char* name : {"sentencepiece-bpe-32k", "gemma3", "llama3.1"}) {
    SCOPED_TRACE(name);
    const Tokenizer& t = family(name);
    const auto prompt = t.encode_with_special_tokens("The capital of France is");
    const auto all = t.encode_with_special_tokens("The capital of France is Paris.\n\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA4\x96");
    ASSERT_TRUE(std::equal(prompt.begin(), prompt.end(), all.begin()));  // the prompt's ids begin the text's
    const std::vector<int32_t> generated(all.begin() + static_cast<std::ptrdiff_t>(prompt.size()), all.end());
    StreamDecoder stream(t);
    stream.prime(prompt);
    std::string text;
    for (const int32_t id : generated) text += stream.push(id);
    text += stream.finish();
    EXPECT_EQ(t.decode(prompt) + text, t.decode(all));
    EXPECT_EQ(text.substr(0, 6), " Paris");
  }
}

}  // namespace
}  // namespace lg::tokenizer

#include <random>

#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer_json.h"

namespace lg::tokenizer {
namespace {

// Without a pre-tokenizer the BPE word is the whole text; Bpe::encode_word cuts it before runs of
// "▁" where no merge can join across (sentencepiece_bpe.cpp says why that is exact). Here the
// cut is checked against plain BPE on the whole text, on random texts built to hit the edges:
// runs of "▁", '>' before "▁" (Gemma 3 merges ">▁</"), characters outside the vocab (byte
// fallback), long words.
TEST(FamilyBpe, CutAtSpacesEqualsWholeTextBpe) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> pieces = {"\xE2\x96\x81", "\xE2\x96\x81\xE2\x96\x81", "the", "a", ">", "</", "<",
                                           "ing", "\xE4\xBD\xA0", "\xF0\x9F\xA4\x96", "\xEA\xB0\x80", "1", "\n",
                                           "\xC3\xA9", "x", "\xE2\x96\x81the", "\xF3\xA0\x80\x81", "ab"};
  for (const char* name : {"sentencepiece-bpe-32k", "gemma3"}) {
    std::ifstream in(family_dir(name) / "tokenizer.json");
    TokenizerJson j = TokenizerJson::parse(in, name);
    const Bpe bpe(j.doc["model"], std::move(j.vocab), j.merges, name, Bpe::Alphabet::unicode);
    for (int k = 0; k < 400; ++k) {
      std::string text;
      const int n = std::uniform_int_distribution<int>(1, 120)(rng);
      for (int i = 0; i < n; ++i) text += pieces[std::uniform_int_distribution<size_t>(0, pieces.size() - 1)(rng)];
      std::vector<int32_t> cut, whole;
      bpe.encode_word(text, cut);
      bpe.encode_word_uncached(text, whole);
      ASSERT_EQ(cut, whole) << name << ": " << nlohmann::json(text).dump();
    }
  }
}

}  // namespace
}  // namespace lg::tokenizer

namespace lg::tokenizer {
namespace {

// Seeded random strings and id lists for the families' tokenizers, with HF's ids and decodes:
// tests/tokenizer/hf_random_cases_NAME.json, made on a machine with HF tokenizers by
// make_hf_random_cases.py --family ../shared/fixtures/tokenizers/NAME/tokenizer.json. Every such
// file present is checked.
TEST(FamilyHfRandomCases, EncodeAndDecodeMatchTheReference) {
  const auto dir = std::filesystem::path(LG_SOURCE_DIR) / "tests/tokenizer";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    const std::string prefix = "hf_random_cases_";
    if (file.rfind(prefix, 0) != 0 || e.path().extension() != ".json") continue;
    const std::string name = file.substr(prefix.size(), file.size() - prefix.size() - 5);
    SCOPED_TRACE(file);
    ++files;
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in);
    const Tokenizer& t = family(name);
    int failures = 0;
    for (const auto& c : j.at("cases")) {
      const std::string text = c.at("text");
      const auto ids = c.at("ids").get<std::vector<int32_t>>();
      const auto got = t.encode(text);
      EXPECT_EQ(got, ids) << "text: " << nlohmann::json(text).dump();
      EXPECT_EQ(t.decode(ids), c.at("decoded").get<std::string>()) << nlohmann::json(text).dump();
      failures += got != ids;
      ASSERT_LT(failures, 10) << "stopping after 10 mismatches";
    }
    for (const auto& c : j.value("decode_cases", nlohmann::json::array())) {
      const auto ids = c.at("ids").get<std::vector<int32_t>>();
      EXPECT_EQ(t.decode(ids), c.at("decoded").get<std::string>()) << nlohmann::json(ids).dump();
    }
  }
  if (files == 0) GTEST_SKIP() << "no tests/tokenizer/hf_random_cases_NAME.json yet (make_hf_random_cases.py --family)";
}

}  // namespace
}  // namespace lg::tokenizer
