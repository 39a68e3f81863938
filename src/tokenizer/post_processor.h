// The special tokens an encode "as the model expects" adds around the text: HF's
// `encode(text, add_special_tokens=True)` for one sequence. They come from tokenizer.json's
// "post_processor" (TemplateProcessing's "single" template, Llama 3's Sequence[ByteLevel,
// TemplateProcessing], RobertaProcessing, BertProcessing; ByteLevel adds nothing) unless
// tokenizer_config.json sets add_bos_token or add_eos_token: then, as transformers' tokenizers
// do (TokenizersBackend.update_post_processor), bos_token if add_bos_token, the text, eos_token
// if add_eos_token (a flag not given counts as false).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lg::tokenizer {

class JsonFields;

/// What tokenizer_config.json says about BOS/EOS (the rest of it is the chat template's and
/// transformers' business).
struct TokenizerConfig {
  std::optional<bool> add_bos_token;  ///< absent when the file does not set it
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token;  ///< content; absent or null in the file -> nullopt
  std::optional<std::string> eos_token;

  /// Reads `file`. Throws lg::Error naming the file (and the field) for bad JSON, JSON nested
  /// deeper than kMaxJsonFileDepth (support/json_file.h) or a field of the wrong type (bos_token
  /// may be a string, null, or an AddedToken object with "content").
  static TokenizerConfig read(const std::filesystem::path& file);
};

/// The ids added before and after the text of one sequence.
struct SpecialTokens {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;

  /// From tokenizer.json's "post_processor" (null adds nothing). Throws lg::Error naming the
  /// file and the field for an unsupported processor or a malformed template (one that names a
  /// special token it does not define, or does not hold the sequence $A exactly once).
  static SpecialTokens from_post_processor(const nlohmann::json& j, const JsonFields& fields);
};

}  // namespace lg::tokenizer
