// Round trips on fresh random Unicode text: decode(encode(s)) == NFC(s), and streaming decode of
// the same ids equals the full decode. The seed is printed so a failure can be replayed
// (LG_TEST_SEED=<seed>).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "test_paths.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

uint64_t seed() {
  if (const char* s = std::getenv("LG_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

// Code points drawn from the ranges that stress the pipeline: ASCII (regex classes,
// contractions), whitespace of every kind, Latin with combining marks (NFC composes), Hangul
// jamo (NFC composes syllables), kana with voicing marks, CJK, emoji with ZWJ and variation
// selectors, and any scalar value at all.
char32_t random_code_point(std::mt19937_64& rng) {
  auto in = [&](char32_t lo, char32_t hi) {
    return static_cast<char32_t>(std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
  };
  static const char32_t spaces[] = {' ', '\t', '\n', '\r', 0x0B, 0x0C, 0x85, 0xA0, 0x1680, 0x2000,
                                    0x2028, 0x2029, 0x202F, 0x3000, 0x180E, 0x200B};
  switch (std::uniform_int_distribution<int>(0, 11)(rng)) {
    case 0: case 1: case 2: return in(0x20, 0x7E);
    case 3: return spaces[in(0, std::size(spaces) - 1)];
    case 4: return in(0xC0, 0x17F);
    case 5: return in(0x300, 0x36F);
    case 6: return in(0x1100, 0x11FF);
    case 7: return in(0x3040, 0x30FF);
    case 8: return in(0x4E00, 0x9FFF);
    case 9: return std::uniform_int_distribution<int>(0, 1)(rng) ? in(0x1F300, 0x1FAFF) : (in(0, 1) ? 0x200D : 0xFE0F);
    case 10: return in(0xAC00, 0xD7A3);
    default: {
      char32_t c;
      do c = in(0, 0x10FFFF); while (c >= 0xD800 && c <= 0xDFFF);
      return c;
    }
  }
}

std::string random_text(std::mt19937_64& rng, size_t max_code_points) {
  std::string s;
  const size_t n = std::uniform_int_distribution<size_t>(0, max_code_points)(rng);
  for (size_t i = 0; i < n; ++i) utf8::append_code_point(random_code_point(rng), s);
  return s;
}

TEST(TokenizerRoundTrip, RandomUnicodeTextDecodesToItsNfc) {
  const uint64_t s = seed();
  SCOPED_TRACE("LG_TEST_SEED=" + std::to_string(s));
  std::mt19937_64 rng(s);
  const Tokenizer& t = testing::qwen();
  for (int k = 0; k < 3000; ++k) {
    const std::string text = random_text(rng, 64);
    const auto ids = t.encode(text);
    const std::string decoded = t.decode(ids);
    ASSERT_EQ(decoded, nfc(text)) << "case " << k;
    StreamDecoder stream(t);
    std::string joined;
    for (const int32_t id : ids) {
      const std::string piece = stream.push(id);
      ASSERT_EQ(utf8::first_invalid(piece), std::string_view::npos) << "case " << k;
      joined += piece;
    }
    joined += stream.finish();
    ASSERT_EQ(joined, decoded) << "case " << k;
  }
}

// skip_special_tokens leaves out exactly the tokens tokenizer.json marks special, whole or streamed.
TEST(TokenizerRoundTrip, AddedTokensInRandomTextSurviveAndGetTheirIds) {
  const uint64_t s = seed();
  SCOPED_TRACE("LG_TEST_SEED=" + std::to_string(s));
  std::mt19937_64 rng(s);
  const Tokenizer& t = testing::qwen();
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"};
  // tokenizer.json marks the first three "special" (control tokens), not <think> and </think>.
  ASSERT_TRUE(t.is_special(*t.token_to_id("<|im_end|>")));
  ASSERT_FALSE(t.is_special(*t.token_to_id("<think>")));
  for (int k = 0; k < 500; ++k) {
    // Plain ASCII around the tokens, so NFC of the pieces is the identity.
    std::string text, without_special;  // the text, and what skip_special_tokens makes of it
    size_t expected_specials = 0;
    for (int part = 0; part < 6; ++part) {
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        const char* token = specials[std::uniform_int_distribution<size_t>(0, 4)(rng)];
        text += token;
        if (!t.is_special(*t.token_to_id(token))) without_special += token;
        ++expected_specials;
      }
      const size_t n = std::uniform_int_distribution<size_t>(0, 8)(rng);
      for (size_t i = 0; i < n; ++i) {
        const auto c = static_cast<char>(std::uniform_int_distribution<int>(0x20, 0x7E)(rng));
        text += c;
        without_special += c;
      }
    }
    const auto ids = t.encode(text);
    ASSERT_EQ(t.decode(ids), text);
    ASSERT_EQ(t.decode(ids, /*skip_special_tokens=*/true), without_special) << text;
    StreamDecoder stream(t, /*skip_special_tokens=*/true);
    std::string streamed;
    for (const int32_t id : ids) streamed += stream.push(id);
    ASSERT_EQ(streamed + stream.finish(), without_special) << text;
    size_t found = 0;
    for (const int32_t id : ids) found += id >= 151643;
    // Random ASCII could spell a token itself, but never fewer than the ones inserted whole.
    EXPECT_GE(found, expected_specials) << text;
  }
}

}  // namespace
}  // namespace lg::tokenizer

namespace lg::tokenizer {
namespace {

// encode is const and shares one pre-token cache between threads: several threads encoding
// random text at once must each get what a single
// thread gets.
TEST(TokenizerThreads, ConcurrentEncodeEqualsSequential) {
  const uint64_t s = seed();
  SCOPED_TRACE("LG_TEST_SEED=" + std::to_string(s));
  std::mt19937_64 rng(s);
  std::vector<std::string> texts;
  for (int k = 0; k < 400; ++k) texts.push_back(random_text(rng, 200));
  const Tokenizer& t = testing::qwen();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& text : texts) expected.push_back(t.encode(text));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (size_t k = 0; k < texts.size(); ++k) {
        const size_t i = (k * 7 + static_cast<size_t>(w) * 101) % texts.size();
        mismatches[static_cast<size_t>(w)] += t.encode(texts[i]) != expected[i];
      }
    });
  for (auto& th : threads) th.join();
  for (int w = 0; w < 4; ++w) EXPECT_EQ(mismatches[static_cast<size_t>(w)], 0) << "thread " << w;
}

}  // namespace
}  // namespace lg::tokenizer
