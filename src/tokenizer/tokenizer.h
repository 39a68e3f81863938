// The Qwen tokenizer (Qwen2Tokenizer in a Hugging Face tokenizer.json): NFC normalizer, Split
// pre-tokenizer with the Qwen regex, byte-level BPE with merges by rank, ByteLevel decoder, and
// added/special tokens matched in the text. Reference: Hugging Face `tokenizers` (0.23.2), checked
// through shared/fixtures/tokenizer/cases.json. Anything else in tokenizer.json is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lg::tokenizer {

/// A loaded byte-level BPE tokenizer. Immutable after loading; encode/decode are safe to call
/// from several threads at once (the pre-token cache is internally locked).
class Tokenizer {
 public:
  /// Loads tokenizer.json. Throws lg::Error naming the file and the field for a missing/malformed
  /// field or an unsupported kind (model other than BPE, normalizer other than NFC/none,
  /// pre-tokenizer other than Split(regex, Isolated) + ByteLevel, decoder other than ByteLevel).
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);

  /// Text (UTF-8) -> token ids, like HF `encode(text, add_special_tokens=False)`: added and special
  /// tokens written in the text are matched (longest first), the rest is NFC-normalized,
  /// pre-tokenized and BPE-merged. Throws lg::Error if `text` is not valid UTF-8 (names the byte).
  std::vector<int32_t> encode(std::string_view text) const;

  /// Token ids -> text, like HF `decode(ids, skip_special_tokens=False)`: token bytes are
  /// concatenated and invalid UTF-8 becomes U+FFFD per maximal invalid subpart (Rust
  /// from_utf8_lossy). Ids with no token (e.g. the embedding rows past the tokenizer's vocab
  /// that config.json's vocab_size pads to) decode to nothing, as in the reference.
  std::string decode(std::span<const int32_t> ids) const;

  /// The id of a token written in its tokenizer.json form (byte-level chars, e.g. "Ġthe", or an
  /// added token's content such as "<|im_end|>"), or nullopt.
  std::optional<int32_t> token_to_id(std::string_view token) const;

  /// The token of an id in its tokenizer.json form, or nullopt for an id with no token.
  std::optional<std::string> id_to_token(int32_t id) const;

  /// The raw bytes an id decodes to (may be a partial UTF-8 sequence), or nullopt.
  std::optional<std::string_view> token_bytes(int32_t id) const;

  /// True for added tokens flagged `special` (<|endoftext|>, <|im_start|>, ...).
  bool is_special(int32_t id) const;

  /// Number of ids the tokenizer knows: max id + 1 over the BPE vocab and added tokens (151,669
  /// for Qwen3). config.json's vocab_size (151,936) may be larger: those rows have no token.
  int64_t vocab_size() const;

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Incremental decode for generation: push ids one at a time and get the text they complete.
/// A token that ends inside a UTF-8 sequence yields nothing until the sequence completes, so the
/// concatenation of push() results and finish() equals Tokenizer::decode of all ids and never
/// contains a partial character. Holds a reference: the Tokenizer must outlive it.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer);
  /// Appends one id; returns the newly completed text (possibly empty).
  std::string push(int32_t id);
  /// Flushes what is left: an incomplete trailing sequence becomes one U+FFFD. Resets the state.
  std::string finish();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;  // bytes not yet emitted: at most an incomplete UTF-8 sequence (<= 3 bytes)
};

}  // namespace lg::tokenizer
