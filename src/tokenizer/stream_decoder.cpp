// StreamDecoder (declared in tokenizer.h): holds back only a trailing UTF-8 sequence that more
// bytes could still complete. Because the lossy decoder decides each sequence from its own bytes,
// left to right, emitting everything before that tail gives the same text as a full decode.
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

std::string StreamDecoder::push(int32_t id) {
  const auto bytes = tokenizer_->token_bytes(id);
  if (!bytes) return {};
  pending_.append(*bytes);
  std::string out;
  const size_t used = utf8::append_lossy(pending_, out, /*hold_incomplete_tail=*/true);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  utf8::append_lossy(pending_, out, /*hold_incomplete_tail=*/false);
  pending_.clear();
  return out;
}

}  // namespace lg::tokenizer
