// Whether a model directory's tokenizer fits its checkpoint. A tokenizer.json from another model
// (or a tokenizer_config.json eos_token that names no token) loads fine and only shows later: as
// every text request refused for an id past the model's vocabulary, or as generation that never
// stops on the eos token. lg run, lg serve, lg batch and lg inspect say so once at start-up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lg::tokenizer {

/// The warnings (one sentence each, no "lg: warning:" prefix or newline) for tokenizer `tok`,
/// loaded from `tokenizer_json`, against a checkpoint of `model_vocab` logits (config.json's
/// vocab_size; <= 0: unknown, not checked): ids the tokenizer can produce at or past model_vocab,
/// and an eos_token of tokenizer_config.json that is no token of tokenizer.json. Empty when it fits.
std::vector<std::string> model_fit_warnings(const Tokenizer& tok, const std::filesystem::path& tokenizer_json,
                                            int64_t model_vocab);

/// Prints each of model_fit_warnings' sentences to stderr as "lg: warning: ...".
void warn_model_fit(const Tokenizer& tok, const std::filesystem::path& tokenizer_json, int64_t model_vocab);

}  // namespace lg::tokenizer
