#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>

#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

// Rust char::is_whitespace: the Unicode White_Space property.
bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// A word character for single_word: a letter, a number or '_' (the reference uses Rust's
// is_alphanumeric, i.e. Alphabetic or Numeric; letters and numbers by general category are the
// same up to rare marks).
bool is_word_char(char32_t c) {
  if (c == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// The code point that ends text[0, end) (end > 0, valid UTF-8).
char32_t last_code_point(std::string_view text, size_t end, size_t* start_out) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  if (start_out) *start_out = start;
  return utf8::next_code_point(text, i);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const auto& t : tokens)
    if (!t.content.empty()) tokens_.push_back(t);
  for (uint32_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& bucket : by_first_byte_)
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t emitted = 0;  // end of what has been emitted
  size_t i = 0;        // where the search for the next match resumes
  const size_t n = text.size();
  while (i < n) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (uint32_t k : bucket) {
      const auto& c = tokens_[k].content;
      if (c.size() <= n - i && std::memcmp(text.data() + i, c.data(), c.size()) == 0) {
        hit = &tokens_[k];
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    i = stop;
    if (hit->single_word) {
      const bool word_before = start > 0 && is_word_char(last_code_point(text, start, nullptr));
      size_t j = stop;
      const bool word_after = stop < n && is_word_char(utf8::next_code_point(text, j));
      if (word_before || word_after) continue;
    }
    if (hit->lstrip) {
      size_t s = start;
      while (s > emitted) {
        size_t prev;
        if (!is_whitespace(last_code_point(text, s, &prev))) break;
        s = prev;
      }
      start = s;
    }
    if (hit->rstrip) {
      while (stop < n) {
        size_t j = stop;
        if (!is_whitespace(utf8::next_code_point(text, j))) break;
        stop = j;
      }
      i = stop;
    }
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), hit->id});
    emitted = stop;
  }
  if (emitted < n) out.push_back({text.substr(emitted), -1});
}

}  // namespace lg::tokenizer
