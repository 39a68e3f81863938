#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/split_regex.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <cstdint>
#include <cstdio>

#include "support/error.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match state: JIT matching needs a match-data block and a JIT stack, and allocating
// them per call would cost more than matching a short text.
struct Scratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  // 8 MiB of JIT stack: enough for backtracking over very long runs of one class.
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  Scratch() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~Scratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// --- Unicode agreement with the reference ------------------------------------------------------
// HF tokenizers runs the pattern on Oniguruma (Unicode 15.0). Two things differ in PCRE2 10.42:
//  * \s: PCRE2 takes \p{Z} plus \h and \v, which adds U+180E MONGOLIAN VOWEL SEPARATOR (a format
//    character since Unicode 6.3); Oniguruma takes the White_Space property. So \s and \S are
//    rewritten as explicit White_Space classes.
//  * \p{L} and \p{N}: PCRE2 10.42 knows Unicode 14; letters and numbers added in Unicode 15 (CJK
//    Extension H, Kawi, Nag Mundari, Kaktovik numerals, ...) would fall into the "other" branch.
//    The code points that utf8proc (Unicode 15) calls letters/numbers but PCRE2 does not match are
//    appended to those classes.
constexpr const char* kWhiteSpace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool is_letter(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
}
bool is_number(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

// Code points of `want` (per utf8proc) that PCRE2's `\p{<cls>}` misses, as class ranges
// "\x{a}-\x{b}..." (empty when PCRE2's tables are as new as utf8proc's).
std::string missing_from_pcre2(bool (*want)(utf8proc_category_t), const char* cls) {
  std::string subject;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    if (want(utf8proc_category(static_cast<utf8proc_int32_t>(c)))) utf8::append_code_point(c, subject);
  }
  const std::string pattern = std::string("[^\\p{") + cls + "}]";
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  std::vector<char32_t> missing;
  size_t pos = 0;
  while (re && pos < subject.size() &&
         pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), pos,
                     PCRE2_NO_UTF_CHECK, md, nullptr) >= 0) {
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t i = ov[0];
    missing.push_back(utf8::next_code_point(subject, i));
    pos = i;
  }
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  std::string ranges;
  char buf[40];
  for (size_t i = 0; i < missing.size();) {
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1) ++j;
    std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(missing[i]),
                  static_cast<unsigned>(missing[j]));
    ranges += buf;
    i = j + 1;
  }
  return ranges;
}

const std::string& extra_letters() {
  static const std::string s = missing_from_pcre2(is_letter, "L");
  return s;
}
const std::string& extra_numbers() {
  static const std::string s = missing_from_pcre2(is_number, "N");
  return s;
}

}  // namespace

std::string onig_compatible_pattern(const std::string& pattern, const std::string& where) {
  std::string out;
  bool in_class = false;
  size_t class_start = 0;  // index just after "[" or "[^"
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
        ++i;
      } else if (e == 'S') {
        if (in_class)
          throw Error(where + ": \\S inside a character class is not supported (offset " + std::to_string(i) + ")");
        out += "[^" + std::string(kWhiteSpace) + "]";
        ++i;
      } else if (pattern.compare(i, 5, "\\p{L}") == 0 || pattern.compare(i, 5, "\\p{N}") == 0) {
        const std::string& extra = pattern[i + 3] == 'L' ? extra_letters() : extra_numbers();
        const std::string cls = pattern.substr(i, 5) + extra;
        out += in_class || extra.empty() ? cls : "[" + cls + "]";
        i += 4;
      } else {
        out += c;
        out += e;
        ++i;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      class_start = i + 1;
      continue;
    }
    if (in_class && c == ']' && i != class_start) in_class = false;
    out += c;
  }
  return out;
}

struct SplitRegex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(const std::string& pattern, const std::string& where)
    : code_(std::make_unique<Code>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  const std::string translated = onig_compatible_pattern(pattern, where);
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (!code_->code)
    throw Error(where + ": the split regex does not compile at offset " + std::to_string(offset) +
                ": " + pcre2_message(err));
  // Without JIT (a PCRE2 built without it) matching falls back to the interpreter: slower, same
  // results.
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

SplitRegex::~SplitRegex() = default;

void SplitRegex::find_matches(std::string_view text, std::vector<PatternMatch>& out) const {
  find_matches(text, [&](const PatternMatch& m) { out.push_back(m); });
}

void SplitRegex::find_matches(std::string_view text, const std::function<void(const PatternMatch&)>& out) const {
  Scratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;                       // where the next search starts
  size_t emitted = 0;                   // end of what has been appended
  size_t last_match_end = SIZE_MAX;     // none yet
  while (pos <= text.size() && !text.empty()) {
    const int rc = code_->jit
                       ? pcre2_jit_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                         s.data, s.context)
                       : pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                     s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error("tokenizer: a regex failed on a text of " + std::to_string(text.size()) +
                  " bytes: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    const size_t start = ov[0], end = ov[1];
    if (start == end) {
      // Step over one character so the search makes progress; an empty match right where the
      // previous match ended is dropped (Oniguruma's find_iter, like Rust regex's).
      pos = end + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      if (end == last_match_end) continue;
    } else {
      pos = end;
    }
    last_match_end = end;
    if (start > emitted) out({emitted, start, false});
    out({start, end, true});
    emitted = end;
  }
  if (emitted < text.size()) out({emitted, text.size(), false});
}

void SplitRegex::split(std::string_view text, std::vector<std::string_view>& out) const {
  find_matches(text, [&](const PatternMatch& m) {
    if (m.end > m.start) out.push_back(text.substr(m.start, m.end - m.start));
  });
}

}  // namespace lg::tokenizer
