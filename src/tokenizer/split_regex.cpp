#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/split_regex.h"

#include <pcre2.h>

#include "support/error.h"

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

}  // namespace

struct SplitRegex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(const std::string& pattern, const std::string& where)
    : code_(std::make_unique<Code>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (!code_->code)
    throw Error(where + ": the split regex does not compile at offset " + std::to_string(offset) +
                ": " + pcre2_message(err));
  // Without JIT (a PCRE2 built without it) matching falls back to the interpreter: slower, same
  // results.
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

SplitRegex::~SplitRegex() = default;

void SplitRegex::split(std::string_view text, std::vector<std::string_view>& out) const {
  Scratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;  // start of the next search
  size_t emitted = 0;  // end of what has been emitted
  while (pos < text.size()) {
    const int rc = code_->jit
                       ? pcre2_jit_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                         s.data, s.context)
                       : pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                     s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error("pre-tokenizer: the split regex failed on a text of " +
                  std::to_string(text.size()) + " bytes: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    const size_t start = ov[0], end = ov[1];
    if (end == start) {
      // An empty match yields no pre-token; step over one code point and search again.
      pos = start + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (start > emitted) out.push_back(text.substr(emitted, start - emitted));
    out.push_back(text.substr(start, end - start));
    emitted = pos = end;
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
}

}  // namespace lg::tokenizer
