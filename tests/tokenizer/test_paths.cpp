#include "test_paths.h"

namespace lg::tokenizer::testing {

std::filesystem::path qwen_tokenizer_json() {
  return std::filesystem::path(LG_SHARED_DIR) / "models/qwen3-pycode-22m/tokenizer.json";
}

const Tokenizer& qwen() {
  static const Tokenizer t = Tokenizer::from_file(qwen_tokenizer_json());
  return t;
}

}  // namespace lg::tokenizer::testing
