// The decoder of tokenizer.json (HF tokenizers `decoders`): token strings -> text. HF runs the
// chain on the whole token list (`decode_chain`, then joins); lanegraph runs the same chain as a
// stream, token by token, emitting text as soon as no later token can change it, so a full
// decode and a streamed one are the same computation and give the same text by construction.
//
// Supported (HF semantics, checked against the fixtures' decodes):
//  - ByteLevel: every token's byte-level characters become bytes (a token with a character
//    outside the alphabet keeps its UTF-8), the bytes are joined and invalid UTF-8 becomes
//    U+FFFD per maximal subpart (Rust from_utf8_lossy);
//  - Replace (String or Regex pattern -> content; Llama 2 / Gemma's "▁" -> " "), per token;
//  - ByteFallback: a run of "<0xXX>" tokens becomes its bytes if they are valid UTF-8 as a
//    whole, else one U+FFFD per byte;
//  - Fuse: the tokens become one;
//  - Strip (content, start, stop): up to `start` leading and `stop` trailing `content`
//    characters are removed from each token (after Fuse: from the whole text);
//  - Metaspace (replacement, prepend_scheme/add_prefix_space): the replacement becomes " ",
//    except in the first token, where it is dropped unless the scheme is "never";
//  - a Sequence of these.
// After Fuse or ByteLevel the stream is one token whose end is unknown, so ByteFallback,
// ByteLevel and a Regex Replace are refused there (they would need the whole text).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pattern.h"

namespace lg::tokenizer {

class JsonFields;

/// A loaded "decoder". Immutable; Streams read it concurrently.
class Decoder {
 public:
  /// Reads tokenizer.json's "decoder". Throws lg::Error naming the file and the field
  /// ("decoder.decoders[3].type") for a missing, unsupported or malformed decoder.
  static Decoder from_json(const nlohmann::json& j, const JsonFields& fields);

  /// True if the chain has a ByteLevel step (tokens are in the byte-level alphabet).
  bool byte_level() const { return byte_level_; }

  /// What one token stands for in the middle of a text, as raw bytes (possibly a partial UTF-8
  /// sequence): the per-token steps applied to it alone, a "<0xXX>" token as its byte, the
  /// byte-level characters as bytes; start-of-text effects (Strip after Fuse, Metaspace's first
  /// token) left out.
  std::string token_bytes(std::string_view token) const;

  /// One decode in progress. Holds a reference: the Decoder must outlive it.
  class Stream {
   public:
    explicit Stream(const Decoder& decoder);
    ~Stream();
    Stream(Stream&&) noexcept;
    Stream& operator=(Stream&&) noexcept;
    /// Feeds one token (its tokenizer.json string, valid UTF-8); appends to `out` the text that
    /// became final (valid UTF-8, never a partial character).
    void push(std::string_view token, std::string& out);
    /// Ends the text: appends what was held back and resets the stream for a new text.
    void finish(std::string& out);
    /// Appends what is held back only because a later token could extend it although it is
    /// already whole text: ByteFallback's runs of bytes that are valid UTF-8 (HF decodes a run as
    /// a whole, so streaming holds it until a non-byte token). For the end of a primed prompt,
    /// whose text the caller has: a run left held would come out as the completion's first text.
    /// An incomplete run stays held (the next tokens may complete its character).
    void settle(std::string& out);

   private:
    struct State;
    void feed_token(size_t step, std::string_view token, std::string& out);
    void flush_bytes(size_t step, std::string& out);
    void feed_fused(std::string_view token, std::string& out);
    void feed_text(size_t step, std::string_view text, std::string& out);
    const Decoder* decoder_;
    std::unique_ptr<State> state_;
  };

 private:
  enum class Kind { replace, strip, metaspace, byte_fallback, fuse, byte_level };
  struct Step {
    Kind kind;
    Pattern pattern;           // replace
    std::string content;       // replace: replacement; strip: the character; metaspace: replacement
    size_t start = 0, stop = 0;  // strip
    bool drop_in_first = true;   // metaspace: prepend_scheme != never
  };
  void read(const nlohmann::json& j, const JsonFields& fields, const std::string& field);

  std::vector<Step> token_steps_;  // before the fuse point, on whole tokens
  enum class Fuse { none, fuse, byte_level } fuse_ = Fuse::none;
  std::vector<Step> text_steps_;   // after it, on the single fused token's text as it streams
  bool byte_level_ = false;
};

}  // namespace lg::tokenizer
