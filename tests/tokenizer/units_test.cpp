// Unit checks of the pieces: lossy UTF-8 against the Unicode standard's examples, the byte-level
// alphabet, BPE merging against a plain quadratic reference, and the NFC shortcut's ranges.
#include <gtest/gtest.h>

#include <utf8proc.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "test_paths.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "support/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/split_regex.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

std::string lossy(std::string_view s) {
  std::string out;
  utf8::append_lossy(s, out, false);
  return out;
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  const std::string R(utf8::kReplacement);
  EXPECT_EQ(lossy("abc"), "abc");
  // Unicode 15 §3.9, Table 3-8: "61 F1 80 80 E1 80 C2 62 80 63 80 BF 64" -> a FFFD FFFD FFFD b
  // FFFD c FFFD FFFD d.
  EXPECT_EQ(lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + R + R + R + "b" + R + "c" + R + R + "d");
  EXPECT_EQ(lossy("\xC0\xAF"), R + R);          // overlong lead bytes are never valid
  EXPECT_EQ(lossy("\xE0\x80\xAF"), R + R + R);  // E0 needs A0..BF next
  EXPECT_EQ(lossy("\xED\xA0\x80"), R + R + R);  // surrogates
  EXPECT_EQ(lossy("\xF0\x9F\x98"), R);          // truncated emoji at the end: one U+FFFD
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), R + R + R + R);  // above U+10FFFF
  EXPECT_EQ(lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Utf8, HoldsOnlyAnIncompleteTail) {
  std::string out;
  EXPECT_EQ(utf8::append_lossy("ab\xF0\x9F", out, true), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  // An invalid byte is not held back even at the end: no continuation can repair it.
  EXPECT_EQ(utf8::append_lossy("a\xFF", out, true), 2u);
  EXPECT_EQ(utf8::first_invalid("ok\xE4\xBD"), 2u);
  EXPECT_EQ(utf8::first_invalid("\xE4\xBD\xA0"), std::string_view::npos);
}

TEST(ByteLevel, AlphabetIsGpt2s) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_level::byte_to_char(static_cast<unsigned char>(b));
    seen.insert(c);
    EXPECT_EQ(byte_level::char_to_byte(c), static_cast<unsigned char>(b));
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_level::byte_to_char(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_level::byte_to_char('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_level::byte_to_char('a'), U'a');
  EXPECT_EQ(byte_level::byte_to_char(0xAD), 0x143u);  // soft hyphen is the last remapped byte
  EXPECT_FALSE(byte_level::char_to_byte(U' ').has_value());
  EXPECT_EQ(byte_level::decode_token("Ġthe"), " the");
  EXPECT_EQ(byte_level::decode_token("a b"), "a b");  // a raw space is outside: kept as UTF-8
}

// The plain BPE definition: repeatedly merge the leftmost adjacent pair of lowest rank.
std::vector<int32_t> reference_bpe(const Tokenizer& t, const std::map<std::pair<std::string, std::string>, size_t>& rank,
                                   std::string_view word) {
  std::vector<std::string> parts;
  for (const char c : word) parts.push_back(byte_level::from_bytes(std::string(1, c)));
  while (parts.size() > 1) {
    size_t best = SIZE_MAX, at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i)
      if (auto it = rank.find({parts[i], parts[i + 1]}); it != rank.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    if (best == SIZE_MAX) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  std::vector<int32_t> ids;
  for (const auto& p : parts) ids.push_back(*t.token_to_id(p));
  return ids;
}

TEST(Bpe, HeapMergingEqualsTheQuadraticDefinition) {
  std::ifstream in(testing::qwen_tokenizer_json());
  const auto j = nlohmann::json::parse(in);
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (const auto& m : j["model"]["merges"]) rank.emplace(std::pair<std::string, std::string>(m[0], m[1]), rank.size());
  const Bpe bpe(j["model"], "tokenizer.json");
  const Tokenizer& t = testing::qwen();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Words from a small alphabet, so that long merge chains and repeated pairs ("aaaa") occur;
  // BPE runs on bytes, so the split of a 3-byte character is fine here.
  const std::string alphabet = "aeinorst _\xE4\xBD\xA0\n";
  for (int k = 0; k < 3000; ++k) {
    std::string word;
    const size_t n = std::uniform_int_distribution<size_t>(1, 40)(rng);
    for (size_t i = 0; i < n; ++i) word += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    const auto expected = reference_bpe(t, rank, word);
    std::vector<int32_t> uncached, cached, cached_again;
    bpe.encode_word_uncached(word, uncached);
    bpe.encode_word(word, cached);
    bpe.encode_word(word, cached_again);
    ASSERT_EQ(uncached, expected) << word;
    ASSERT_EQ(cached, expected) << word;
    ASSERT_EQ(cached_again, expected) << word;
  }
}

TEST(Nfc, ShortcutRangesAreInert) {
  // Every code point of the shortcut ranges: combining class 0, no canonical decomposition,
  // and never the second half of a canonical decomposition pair (so it cannot compose).
  std::set<int32_t> second_halves;
  for (int32_t c = 0; c <= 0x10FFFF; ++c) {
    const auto* p = utf8proc_get_property(c);
    if (p->decomp_type != 0) continue;  // compatibility mappings don't compose
    utf8proc_int32_t d[4];
    int last_boundclass = 0;
    const auto n = utf8proc_decompose_char(c, d, 4, UTF8PROC_DECOMPOSE, &last_boundclass);
    if (n == 2) second_halves.insert(d[1]);
  }
  auto check = [&](int32_t lo, int32_t hi) {
    for (int32_t c = lo; c <= hi; ++c) {
      std::string s;
      utf8::append_code_point(static_cast<char32_t>(c), s);
      ASSERT_TRUE(nfc_quick_yes(s)) << std::hex << c;
      ASSERT_EQ(utf8proc_get_property(c)->combining_class, 0) << std::hex << c;
      ASSERT_EQ(nfc(s + "x"), s + "x") << std::hex << c;  // nfc() takes the shortcut: ask utf8proc directly
      utf8proc_uint8_t* out = nullptr;
      const auto len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &out,
                                    static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      ASSERT_EQ(std::string(reinterpret_cast<char*>(out), static_cast<size_t>(len)), s) << std::hex << c;
      std::free(out);
      ASSERT_EQ(second_halves.count(c), 0u) << std::hex << c;
    }
  };
  check(0, 0x2FF);
  check(0x4E00, 0x9FFF);
  check(0xAC00, 0xD7A3);
  check(0xFF01, 0xFF5E);
  check(0x1F300, 0x1FAFF);
  // And the shortcut declines what NFC changes.
  EXPECT_FALSE(nfc_quick_yes("e\xCC\x81"));
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // jamo G + A -> 가
}

}  // namespace
}  // namespace lg::tokenizer

namespace lg::tokenizer {
namespace {

TEST(SplitRegex, FollowsOnigurumaOnWhitespaceAndUnicode15Letters) {
  const std::string translated = onig_compatible_pattern("[^\\s\\p{L}]+|\\s+(?!\\S)|\\p{N}", "test");
  EXPECT_EQ(translated.find("\\s"), std::string::npos) << translated;
  EXPECT_EQ(translated.find("\\S"), std::string::npos) << translated;
  EXPECT_THROW(onig_compatible_pattern("[\\S]", "test"), Error);
  const SplitRegex re("\\p{L}+|\\s+|[^\\s\\p{L}]+", "test");
  auto pieces = [&](std::string_view text) {
    std::vector<std::string_view> out;
    re.split(text, out);
    return std::vector<std::string>(out.begin(), out.end());
  };
  // U+180E is not White_Space (since Unicode 6.3) though PCRE2's \h includes it.
  EXPECT_EQ(pieces("a\xE1\xA0\x8E b"), (std::vector<std::string>{"a", "\xE1\xA0\x8E", " ", "b"}));
  // U+320F1 (CJK Extension H, Unicode 15) is a letter.
  EXPECT_EQ(pieces("x\xF0\xB2\x83\xB1'"), (std::vector<std::string>{"x\xF0\xB2\x83\xB1", "'"}));
  // Pieces cover the text exactly, also where nothing matches.
  const SplitRegex digits("[0-9]+", "test");
  std::vector<std::string_view> out;
  digits.split("ab12cd3", out);
  EXPECT_EQ(std::vector<std::string>(out.begin(), out.end()), (std::vector<std::string>{"ab", "12", "cd", "3"}));
}

}  // namespace
}  // namespace lg::tokenizer

namespace lg::tokenizer {
namespace {

TEST(Bpe, CacheStartsOverWhenFullAndStaysCorrect) {
  std::ifstream in(testing::qwen_tokenizer_json());
  const auto j = nlohmann::json::parse(in);
  const Bpe bpe(j["model"], "tokenizer.json");
  // 200,000 distinct words: more than the cache holds (131,072), so it starts over at least once;
  // every word, then the first ones again, must come out as without the cache.
  auto word = [](uint32_t k) { return "w" + std::to_string(k * 2654435761u); };
  for (uint32_t k = 0; k < 200'000; ++k) {
    std::vector<int32_t> cached, plain;
    bpe.encode_word(word(k), cached);
    bpe.encode_word_uncached(word(k), plain);
    ASSERT_EQ(cached, plain) << word(k);
  }
  for (uint32_t k = 0; k < 1000; ++k) {
    std::vector<int32_t> cached, plain;
    bpe.encode_word(word(k), cached);
    bpe.encode_word_uncached(word(k), plain);
    ASSERT_EQ(cached, plain) << word(k);
  }
}

}  // namespace
}  // namespace lg::tokenizer
