// StreamDecoder (declared in tokenizer.h): one Decoder::Stream fed with the ids' token strings.
// The decoder holds back only what a later token could still change (decoder.h), so the pieces
// add up to Tokenizer::decode of all the ids.
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"

namespace lg::tokenizer {

struct StreamDecoder::State {
  explicit State(const Decoder& d) : stream(d) {}
  Decoder::Stream stream;
};

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer),
      state_(std::make_unique<State>(tokenizer.decoder())),
      skip_special_(skip_special_tokens) {}
StreamDecoder::~StreamDecoder() = default;
StreamDecoder::StreamDecoder(StreamDecoder&&) noexcept = default;
StreamDecoder& StreamDecoder::operator=(StreamDecoder&&) noexcept = default;

void StreamDecoder::prime(std::span<const int32_t> context) {
  for (const int32_t id : context) push(id);
  // The prompt's text is the caller's: what the decoder still holds of it that is already whole
  // (a run of byte tokens at its end) must not come out as the completion's first text.
  std::string prompt_tail;
  state_->stream.settle(prompt_tail);
}

std::string StreamDecoder::push(int32_t id) {
  std::string out;
  if (skip_special_ && tokenizer_->is_special(id)) return out;
  if (const auto token = tokenizer_->id_to_token(id)) state_->stream.push(*token, out);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  state_->stream.finish(out);
  return out;
}

}  // namespace lg::tokenizer
