#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "support/error.h"
#include "tokenizer/json_fields.h"
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

namespace {

// NFD / NFKC / NFKD through utf8proc (no shortcut: no tokenizer lanegraph targets uses them).
void append_utf8proc(std::string_view s, std::string& out, int options) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
  if (n < 0) throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  std::free(mapped);
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& j, const JsonFields& fields) {
  Normalizer n;
  if (!j.is_null()) n.read(j, fields, "normalizer");
  return n;
}

void Normalizer::read(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  const std::string type = fields.type_of(j, field);
  if (type == "Sequence") {
    const nlohmann::json& list = fields.require(j, "normalizers", field + ".normalizers");
    if (!list.is_array()) fields.fail(field + ".normalizers", "expected an array");
    for (size_t k = 0; k < list.size(); ++k) read(list[k], fields, field + ".normalizers[" + std::to_string(k) + "]");
  } else if (type == "NFC") {
    steps_.push_back({Kind::nfc, {}, {}});
  } else if (type == "NFD") {
    steps_.push_back({Kind::nfd, {}, {}});
  } else if (type == "NFKC") {
    steps_.push_back({Kind::nfkc, {}, {}});
  } else if (type == "NFKD") {
    steps_.push_back({Kind::nfkd, {}, {}});
  } else if (type == "Replace") {
    Pattern pattern = Pattern::from_json(fields.require(j, "pattern", field + ".pattern"), fields, field + ".pattern");
    steps_.push_back({Kind::replace, std::move(pattern), fields.string(j, "content", field)});
  } else if (type == "Prepend") {
    steps_.push_back({Kind::prepend, {}, fields.string(j, "prepend", field)});
  } else {
    fields.fail(field + ".type", "unsupported normalizer \"" + type +
                                     "\" (lanegraph supports NFC, NFD, NFKC, NFKD, Replace, Prepend, Sequence)");
  }
}

std::string_view Normalizer::apply(std::string_view text, std::string& scratch) const {
  std::string_view cur = text;
  // Each step writes into the buffer `cur` is not in; the two swap, so `scratch` ends up holding
  // the result and both keep their capacity from call to call.
  thread_local std::string spare;
  thread_local std::vector<PatternMatch> matches;
  for (const Step& step : steps_) {
    std::string& next = spare;
    next.clear();
    switch (step.kind) {
      case Kind::nfc:
        if (nfc_quick_yes(cur)) continue;
        append_nfc(cur, next);
        break;
      case Kind::nfd:
        append_utf8proc(cur, next, UTF8PROC_DECOMPOSE);
        break;
      case Kind::nfkc:
        append_utf8proc(cur, next, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
        break;
      case Kind::nfkd:
        append_utf8proc(cur, next, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
        break;
      case Kind::replace: {
        matches.clear();
        step.pattern.find_matches(cur, matches);
        bool any = false;
        for (const PatternMatch& m : matches) any |= m.is_match;
        if (!any) continue;
        next.reserve(cur.size() + cur.size() / 4);
        for (const PatternMatch& m : matches) {
          if (m.is_match) next += step.content;
          else next.append(cur.substr(m.start, m.end - m.start));
        }
        break;
      }
      case Kind::prepend:
        if (cur.empty()) continue;  // HF prepends only to non-empty text
        next.reserve(step.content.size() + cur.size());
        next.append(step.content).append(cur);
        break;
    }
    std::swap(spare, scratch);
    cur = scratch;
  }
  return cur;
}

}  // namespace lg::tokenizer
