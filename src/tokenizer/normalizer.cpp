#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "support/error.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

// Ranges whose code points are NFC-inert as described in normalizer.h; tests/tokenizer checks
// every code point of them against utf8proc's data.
bool inert(char32_t c) {
  return c < 0x300 || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0xFF01 && c <= 0xFF5E) || (c >= 0x1F300 && c <= 0x1FAFF);
}

}  // namespace

bool nfc_quick_yes(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0xCC) {  // lead bytes below 0xCC encode code points below U+0300
      ++i;
      continue;
    }
    if (!inert(utf8::next_code_point(s, i))) return false;
  }
  return true;
}

void append_nfc(std::string_view s, std::string& out) {
  // NFC never acts across a line feed (a starter that composes with nothing), so normalize line
  // by line and hand utf8proc only the lines that need it: most of a mixed text is inert.
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    end = end == std::string_view::npos ? s.size() : end + 1;
    const std::string_view line = s.substr(start, end - start);
    start = end;
    if (nfc_quick_yes(line)) {
      out.append(line);
      continue;
    }
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(line.data()),
                     static_cast<utf8proc_ssize_t>(line.size()), &mapped,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) throw Error(std::string("NFC normalization failed: ") + utf8proc_errmsg(n));
    out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
    std::free(mapped);
  }
}

std::string nfc(std::string_view s) {
  std::string out;
  append_nfc(s, out);
  return out;
}

}  // namespace lg::tokenizer
