// Fuzz target for the tokenizer: arbitrary bytes are encoded (lg::Error for invalid UTF-8 is the
// expected answer, anything else escaping is a bug), decode(encode(s)) must equal NFC(s) for
// valid UTF-8 (modulo NFC across added tokens), the bytes read as little-endian int32 ids must decode without crashing, and
// streaming decode must equal the full decode. The real Qwen3 tokenizer is loaded once, from
// $LG_TOKENIZER_JSON or the model shipped in the repo; any tokenizer.json works there (the
// SentencePiece families of ../shared/fixtures/tokenizers too: see metaspace()).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

const lg::tokenizer::Tokenizer& tokenizer() {
  static const lg::tokenizer::Tokenizer t = [] {
    const char* env = std::getenv("LG_TOKENIZER_JSON");
    return lg::tokenizer::Tokenizer::from_file(env ? env : LG_TOKENIZER_JSON_DEFAULT);
  }();
  return t;
}

// SentencePiece-style tokenizers (Gemma 3, Llama 2, Mistral: a Metaspace or Replace(" ", "▁")
// normalizer, a Replace("▁", " ") decoder) write a space as U+2581 "▁" and decode every "▁"
// back to a space, as transformers does: a "▁" in the text comes back a space. For them the
// round trip is checked against the text with "▁" read as a space.
bool metaspace() {
  static const bool m = [] {
    const auto& tok = tokenizer();
    return tok.decode(tok.encode("a\u2581b")) == "a b";
  }();
  return m;
}

std::string spaces_for_metaspace(std::string s) {
  if (!metaspace()) return s;
  // Copied rather than replaced in place: one pass, and GCC 12 warned falsely (-Wrestrict) inside
  // std::string::replace of 3 bytes by 1.
  const std::string bar = "\u2581";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, bar.size(), bar) == 0) {
      out += ' ';
      i += bar.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string without_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

// libFuzzer calls this once before any input: loading the 11 MB tokenizer.json under ASan takes
// seconds, which must not count against the first input's timeout. (The replay driver does not
// call it; tokenizer() loads lazily there.)
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& tok = tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = lg::tokenizer::utf8::first_invalid(text) == std::string_view::npos;
  try {
    const auto ids = tok.encode(text);
    if (!valid) fail("encode accepted invalid UTF-8");
    const std::string decoded = tok.decode(ids);
    // Text around an added token is normalized on its own (as in the reference), so NFC can
    // differ across that boundary (">" + U+0338 composes to U+226F): compare modulo NFC.
    const std::string expected = spaces_for_metaspace(lg::tokenizer::nfc(text));
    // A Prepend("▁") normalizer (Llama 2's, the 32k SentencePiece fixture's) runs on each piece
    // of text between added tokens, as in the reference: "a<s>b" comes back "a<s> b". There the
    // text must come back but for spaces.
    const bool pieces = metaspace() && std::any_of(ids.begin(), ids.end(), [&](int32_t id) { return tok.is_special(id); });
    if (pieces ? without_spaces(lg::tokenizer::nfc(decoded)) != without_spaces(expected)
               : decoded != expected && lg::tokenizer::nfc(decoded) != expected)
      fail("decode(encode(s)) != NFC(s)");
  } catch (const lg::Error&) {
    if (valid) fail("encode refused valid UTF-8");
  }
  // The same bytes as ids: any int32 must be safe to decode, whole or streamed.
  std::vector<int32_t> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  for (auto& id : ids) id %= static_cast<int32_t>(tok.vocab_size() + 300);  // mostly real ids
  const std::string full = tok.decode(ids);
  if (lg::tokenizer::utf8::first_invalid(full) != std::string_view::npos) fail("decode gave invalid UTF-8");
  lg::tokenizer::StreamDecoder stream(tok);
  std::string joined;
  for (const int32_t id : ids) {
    const std::string piece = stream.push(id);
    if (lg::tokenizer::utf8::first_invalid(piece) != std::string_view::npos) fail("stream gave partial UTF-8");
    joined += piece;
  }
  joined += stream.finish();
  if (joined != full) fail("streaming decode != full decode");
  return 0;
}
