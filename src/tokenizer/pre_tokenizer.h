// The pre-tokenizer of tokenizer.json (HF tokenizers `pre_tokenizers`): normalized text is cut
// into pre-tokens, each encoded by the model on its own. Supported:
//  - Split (String or Regex pattern; behavior Isolated, Removed, MergedWithPrevious,
//    MergedWithNext or Contiguous; invert): Qwen's and Llama 3's regexes;
//  - ByteLevel (add_prefix_space, use_regex with GPT-2's pattern), which must come last: the
//    model then works on bytes (lanegraph never builds the byte-level alphabet text);
//  - Metaspace (replacement, prepend_scheme always/first/never or the older add_prefix_space,
//    split): spaces become "▁" (Mistral v0.3, older Llama 2 files);
//  - Digits (individual_digits);
//  - a Sequence of these. No pre-tokenizer (null) leaves the text whole (Llama 2, Gemma).
#pragma once

#include <deque>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pattern.h"

namespace lg::tokenizer {

class JsonFields;

/// One pre-token: a view into the normalized text or into the caller's arena.
struct PreToken {
  std::string_view text;
  bool at_start;  // begins at offset 0 of the whole input (HF: offsets_original().0 == 0)
};

/// A loaded "pre_tokenizer". Immutable, thread-safe.
class PreTokenizer {
 public:
  /// Reads tokenizer.json's "pre_tokenizer" (null = none). Throws lg::Error naming the file and
  /// the field ("pre_tokenizer.pretokenizers[0].behavior") for an unsupported or malformed one.
  static PreTokenizer from_json(const nlohmann::json& j, const JsonFields& fields);

  /// True if a ByteLevel step maps the pre-tokens to the byte-level alphabet: the model's vocab
  /// is then in that alphabet and BPE starts from bytes.
  bool byte_level() const { return byte_level_; }

  /// Appends the non-empty pre-tokens of `text` (valid UTF-8) to `out`, in order. `at_start`
  /// says whether `text` begins at offset 0 of the input (Metaspace's prepend_scheme "first").
  /// Text made by a step (a Metaspace replacement, a ByteLevel prefix space) lives in `arena`,
  /// which must outlive the views.
  void split(std::string_view text, bool at_start, std::vector<PreToken>& out, std::deque<std::string>& arena) const;

  /// The same, handing each pre-token to `emit` as the last step makes it: a whole text's
  /// pre-tokens are never all held at once.
  void split(std::string_view text, bool at_start, std::deque<std::string>& arena,
             const std::function<void(const PreToken&)>& emit) const;

 private:
  enum class Kind { split, metaspace, byte_level_prefix, gpt2_regex, digits };
  enum class Behavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };
  enum class Prepend { always, first, never };
  struct Step {
    Kind kind;
    Pattern pattern;              // split, gpt2_regex; metaspace: the replacement
    Behavior behavior = Behavior::isolated;
    bool invert = false;
    std::string replacement;      // metaspace: the character spaces become
    Prepend prepend = Prepend::always;
    bool metaspace_split = true;
    bool individual_digits = false;
  };
  void read(const nlohmann::json& j, const JsonFields& fields, const std::string& field);
  using Sink = std::function<void(const PreToken&)>;
  void apply(const Step& step, const PreToken& in, const Sink& out, std::deque<std::string>& arena) const;
  static void cut(std::string_view text, bool at_start, const std::vector<PatternMatch>& matches, Behavior behavior,
                  bool invert, const Sink& out);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace lg::tokenizer
