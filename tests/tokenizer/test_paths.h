// Where the tokenizer tests find the real Qwen3 tokenizer, loaded once per test binary.
#pragma once

#include <filesystem>

#include "tokenizer/tokenizer.h"

namespace lg::tokenizer::testing {

/// shared/models/qwen3-pycode-22m/tokenizer.json (from LG_SHARED_DIR).
std::filesystem::path qwen_tokenizer_json();

/// The real Qwen3 tokenizer, loaded on first use.
const Tokenizer& qwen();

}  // namespace lg::tokenizer::testing
