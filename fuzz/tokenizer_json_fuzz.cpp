// Fuzz target for reading tokenizer.json: the input is a tokenizer.json document, optionally
// followed by a NUL byte and a text. Loading must either give a tokenizer or throw lg::Error
// (anything else escaping, a crash or a hang is a bug). A loaded tokenizer then encodes a few
// fixed texts and the given one: ids must have tokens, the special-token encode must be the plain
// one framed by special_prefix/suffix, decode must give valid UTF-8 and a streamed decode must
// equal the full one. The seeds in fuzz/corpus/tokenizer_json_fuzz/ are small files with every
// supported component (byte-level and SentencePiece-style BPE, Metaspace, Split behaviors,
// decoder chains, post-processors).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "tokenizer_json_fuzz: %s\n", what);
  std::abort();
}

void check_text(const lg::tokenizer::Tokenizer& tok, std::string_view text) {
  using lg::tokenizer::utf8::first_invalid;
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text);
  } catch (const lg::Error&) {
    if (first_invalid(text) == std::string_view::npos) fail("encode refused valid UTF-8");
    return;
  }
  for (const int32_t id : ids)
    if (!tok.id_to_token(id)) fail("encode gave an id with no token");
  std::vector<int32_t> framed(tok.special_prefix().begin(), tok.special_prefix().end());
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.insert(framed.end(), tok.special_suffix().begin(), tok.special_suffix().end());
  if (tok.encode_with_special_tokens(text) != framed) fail("special-token encode is not prefix + encode + suffix");
  // Mostly real ids, some past the vocabulary, which decode skips.
  std::vector<int32_t> more = ids;
  for (size_t i = 0; i < text.size() && i < 64; ++i)
    more.push_back(static_cast<int32_t>(static_cast<unsigned char>(text[i]) * 7 % (tok.vocab_size() + 5)));
  for (const auto& list : {ids, more}) {
    const std::string full = tok.decode(list);
    if (first_invalid(full) != std::string_view::npos) fail("decode gave invalid UTF-8");
    lg::tokenizer::StreamDecoder stream(tok);
    std::string joined;
    for (const int32_t id : list) {
      const std::string piece = stream.push(id);
      if (first_invalid(piece) != std::string_view::npos) fail("stream gave partial UTF-8");
      joined += piece;
    }
    joined += stream.finish();
    if (joined != full) fail("streaming decode != full decode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  std::optional<lg::tokenizer::Tokenizer> tok;
  try {
    tok.emplace(lg::tokenizer::Tokenizer::from_json_text(json, "fuzz.json"));
  } catch (const lg::Error&) {
    return 0;
  }
  for (const char* t : {"", "a b", "Hello, world!", "  \n\t x", "\xC3\xBCn\xC3\xAF \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA4\x96",
                        "<s>x</s><|end|>", "\xE2\x96\x81\xE2\x96\x81y", "a-b--c 1234567 'll"})
    check_text(*tok, t);
  check_text(*tok, text);
  return 0;
}
