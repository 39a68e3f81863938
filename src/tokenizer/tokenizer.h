// A Hugging Face tokenizer.json with a BPE model: byte-level BPE (Qwen2/2.5/3, Llama 3, GPT-2)
// and SentencePiece-style BPE with byte fallback (Llama 2, Mistral, Gemma 3). The pipeline is
// HF tokenizers' (0.23.2): added tokens matched in the text -> normalizer (normalizer.h) ->
// pre-tokenizer (pre_tokenizer.h) -> BPE (bpe.h); the decoder (decoder.h) turns ids back into
// text; the post-processor or tokenizer_config.json (post_processor.h) says which special tokens
// an encode "as the model expects" adds. Checked through shared/fixtures/tokenizer/cases.json and
// shared/fixtures/tokenizers/*/cases.json. A component lanegraph does not implement is refused
// with an error naming the file and the field: never a silent wrong encoding. docs/tokenizer.md
// lists what is supported.
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

class StreamDecoder;
class Decoder;

/// A loaded BPE tokenizer. Immutable after loading; encode/decode are safe to call from several
/// threads at once (the pre-token cache is internally locked).
class Tokenizer {
 public:
  /// Loads tokenizer.json, and the tokenizer_config.json beside it when there is one (for BOS/EOS:
  /// add_bos_token, add_eos_token, bos_token, eos_token). Throws lg::Error naming the file and the
  /// field for a missing/malformed field or an unsupported component (a model other than BPE, a
  /// normalizer, pre-tokenizer, decoder or post-processor kind lanegraph does not implement).
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);

  /// The same with an explicit tokenizer_config.json (nullopt: none, so the post-processor alone
  /// decides the special tokens).
  static Tokenizer from_files(const std::filesystem::path& tokenizer_json,
                              const std::optional<std::filesystem::path>& tokenizer_config_json);

  /// The same from tokenizer.json's text in memory (no tokenizer_config.json); `name` stands for
  /// the file in error messages. For tests and fuzzing.
  static Tokenizer from_json_text(std::string_view json_text, const std::string& name);

  /// Text (UTF-8) -> token ids, like HF `encode(text, add_special_tokens=False)`: added and special
  /// tokens written in the text are matched (longest first), the rest is normalized,
  /// pre-tokenized and BPE-merged; nothing is added around it. Use it for text that already holds
  /// its special tokens (a rendered chat template). Throws lg::Error if `text` is not valid UTF-8
  /// (names the byte).
  std::vector<int32_t> encode(std::string_view text) const;

  /// Text -> ids as the model expects a prompt, like HF `encode(text, add_special_tokens=True)`:
  /// encode(text) with the special tokens of post_processor.h around it (Llama 3's
  /// <|begin_of_text|>, Gemma's <bos>, Llama 2's <s>; nothing for Qwen).
  std::vector<int32_t> encode_with_special_tokens(std::string_view text) const;

  /// The ids encode_with_special_tokens puts before and after the text.
  std::span<const int32_t> special_prefix() const;
  std::span<const int32_t> special_suffix() const;

  /// tokenizer_config.json's bos_token / eos_token (content), or nullopt when it has none (or
  /// there is no tokenizer_config.json).
  std::optional<std::string> bos_token() const;
  std::optional<std::string> eos_token() const;
  /// Their ids, or nullopt when unset or not a token of tokenizer.json.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;

  /// Token ids -> text, like HF `decode(ids, skip_special_tokens)`: the tokens' strings go
  /// through tokenizer.json's decoder (decoder.h), e.g. byte-level bytes joined with invalid
  /// UTF-8 as U+FFFD per maximal subpart (Rust from_utf8_lossy), or "▁" -> " " with byte
  /// fallback. Ids with no token (e.g. the embedding rows past the tokenizer's vocab that
  /// config.json's vocab_size pads to) decode to nothing, as in the reference. With
  /// `skip_special_tokens` the ids of special added tokens (is_special) are left out before the
  /// decoder runs, as HF leaves them out: what a reader of generated text is shown (vLLM's default).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  /// The id of a token written in its tokenizer.json form (byte-level chars, e.g. "Ġthe", or an
  /// added token's content such as "<|im_end|>"), or nullopt.
  std::optional<int32_t> token_to_id(std::string_view token) const;

  /// The token of an id in its tokenizer.json form, or nullopt for an id with no token.
  std::optional<std::string> id_to_token(int32_t id) const;

  /// The raw bytes an id stands for in the middle of a text (may be a partial UTF-8 sequence;
  /// Decoder::token_bytes), or nullopt for an id with no token.
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
  friend class StreamDecoder;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  const Decoder& decoder() const;
  std::unique_ptr<Impl> impl_;
};

/// Incremental decode for generation: push ids one at a time and get the text they complete.
/// Text is held back only while a later token could still change it (a token ending inside a
/// UTF-8 sequence, a run of byte-fallback tokens, a trailing character a Strip decoder may
/// remove), so the concatenation of push() results and finish() equals Tokenizer::decode of all
/// ids and never contains a partial character. Holds a reference: the Tokenizer must outlive it.
class StreamDecoder {
 public:
  /// `skip_special_tokens`: special added tokens give no text, in prime() too, so the pieces add up
  /// to Tokenizer::decode(ids, true) (HF's DecodeStream(skip_special_tokens), which vLLM streams with).
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  ~StreamDecoder();
  StreamDecoder(StreamDecoder&&) noexcept;
  StreamDecoder& operator=(StreamDecoder&&) noexcept;
  /// Feeds ids whose text the caller already has (the prompt) without returning it, so that the
  /// ids pushed next decode in their context: decode(context + generated) = decode(context) +
  /// what push() and finish() return. Without it a SentencePiece decoder would drop the space of
  /// the first generated token ("▁Paris" decodes to "Paris" at the start of a text, " Paris"
  /// after a prompt), as vLLM's detokenizer avoids by decoding with the prompt. Byte-level
  /// tokenizers (Qwen, Llama 3) give the same text either way.
  void prime(std::span<const int32_t> context);
  /// Appends one id; returns the newly completed text (possibly empty).
  std::string push(int32_t id);
  /// Flushes what is left (an incomplete trailing sequence becomes U+FFFD) and resets the state.
  std::string finish();

 private:
  struct State;
  const Tokenizer* tokenizer_;
  std::unique_ptr<State> state_;
  bool skip_special_ = false;
};

}  // namespace lg::tokenizer
