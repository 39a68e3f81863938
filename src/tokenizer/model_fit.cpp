#include "tokenizer/model_fit.h"

#include <cstdio>

namespace lg::tokenizer {

std::vector<std::string> model_fit_warnings(const Tokenizer& tok, const std::filesystem::path& tokenizer_json,
                                            int64_t model_vocab) {
  std::vector<std::string> out;
  if (model_vocab > 0 && tok.vocab_size() > model_vocab)
    out.push_back(tokenizer_json.string() + ": the tokenizer has ids up to " + std::to_string(tok.vocab_size() - 1) +
                  ", past the model's vocab_size of " + std::to_string(model_vocab) +
                  " (config.json): a prompt whose text encodes to one of them is refused; is this tokenizer the "
                  "checkpoint's own?");
  if (const auto eos = tok.eos_token(); eos && !tok.eos_id())
    out.push_back((tokenizer_json.parent_path() / "tokenizer_config.json").string() + ": eos_token \"" + *eos +
                  "\" is no token of tokenizer.json: generation does not stop on it (only on the eos ids of "
                  "config.json and generation_config.json)");
  return out;
}

void warn_model_fit(const Tokenizer& tok, const std::filesystem::path& tokenizer_json, int64_t model_vocab) {
  for (const std::string& w : model_fit_warnings(tok, tokenizer_json, model_vocab))
    std::fprintf(stderr, "lg: warning: %s\n", w.c_str());
}

}  // namespace lg::tokenizer
