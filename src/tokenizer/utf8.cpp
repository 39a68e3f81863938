#include "tokenizer/utf8.h"

#include <cstdint>

namespace lg::tokenizer::utf8 {
namespace {

// Result of looking at one sequence: `length` bytes form a valid scalar (valid = true), or the
// first `length` bytes are the maximal subpart of an invalid/incomplete sequence; `truncated`
// says the subpart only failed because the input ended.
struct Step {
  size_t length;
  bool valid;
  bool truncated;
};

// Accepted range for the second byte given the lead byte (Unicode 15 Table 3-7); later
// continuation bytes are always 0x80..0xBF.
Step step(const unsigned char* p, size_t n) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return {1, true, false};
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false, false};
  }
  for (size_t k = 1; k <= need; ++k) {
    if (k >= n) return {k, false, true};
    const unsigned char b = p[k];
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {k, false, false};
  }
  return {need + 1, true, false};
}

}  // namespace

size_t first_invalid(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII runs are the common case: skip eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Step st = step(p + i, n - i);
    if (!st.valid) return i;
    i += st.length;
  }
  return std::string_view::npos;
}

size_t append_lossy(std::string_view bytes, std::string& out, bool hold_incomplete_tail) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const Step st = step(p + i, n - i);
    if (st.valid) {
      out.append(bytes.data() + i, st.length);
    } else if (st.truncated && hold_incomplete_tail) {
      return i;
    } else {
      out.append(kReplacement);
    }
    i += st.length;
  }
  return i;
}

char32_t next_code_point(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char b0 = p[i];
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t c = ((b0 & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
    i += 2;
    return c;
  }
  if (b0 < 0xF0) {
    const char32_t c = ((b0 & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
    i += 3;
    return c;
  }
  const char32_t c = ((b0 & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                     ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
  i += 4;
  return c;
}

void append_code_point(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace lg::tokenizer::utf8
