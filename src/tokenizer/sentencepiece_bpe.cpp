// The Unicode alphabet of a BPE model, as SentencePiece-converted tokenizers ship it (Llama 2,
// Mistral, Gemma): a word starts as one symbol per character; a character outside the vocab
// becomes its UTF-8 bytes as "<0x0A>"-style tokens when byte_fallback is on and every byte has
// one, else the unk token (consecutive unknowns fused into one with fuse_unk), else it is
// dropped. Follows HF tokenizers' BPE::merge_word, including its order: byte-fallback tokens are
// added before an unk still pending from earlier characters.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {

void Bpe::load_unicode_alphabet(const nlohmann::json& model, const std::string& file) {
  std::fill(std::begin(ascii_id_), std::end(ascii_id_), -1);
  std::fill(std::begin(fallback_id_), std::end(fallback_id_), -1);
  for (size_t id = 0; id < vocab_.id_limit(); ++id) {
    const std::string* token = vocab_.text(static_cast<int32_t>(id));
    if (!token || token->empty() || token->size() > 4) continue;
    size_t i = 0;
    const char32_t c = utf8::next_code_point(*token, i);
    if (i != token->size()) continue;  // not a single character
    if (c < 128) ascii_id_[c] = static_cast<int32_t>(id);
    else char_id_[c] = static_cast<int32_t>(id);
  }
  auto flag = [&](const char* key) {
    if (!model.contains(key) || model[key].is_null()) return false;
    if (!model[key].is_boolean()) throw Error(file + ": model." + key + ": expected true or false");
    return model[key].get<bool>();
  };
  byte_fallback_ = flag("byte_fallback");
  fuse_unk_ = flag("fuse_unk");
  if (byte_fallback_) {
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof name, "<0x%02X>", b);  // HF's format!("<{b:#04X}>")
      if (auto id = vocab_.find(name)) fallback_id_[b] = *id;
    }
  }
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    if (!model["unk_token"].is_string()) throw Error(file + ": model.unk_token: expected a string");
    const auto id = vocab_.find(model["unk_token"].get<std::string>());
    if (!id) throw Error(file + ": model.unk_token: \"" + model["unk_token"].get<std::string>() + "\" is not in model.vocab");
    unk_id_ = *id;
  }
}

void Bpe::unicode_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  bool unk_pending = false;
  for (size_t i = 0; i < word.size();) {
    const size_t start = i;
    const char32_t c = utf8::next_code_point(word, i);
    int32_t id = -1;
    if (c < 128) {
      id = ascii_id_[c];
    } else if (auto it = char_id_.find(c); it != char_id_.end()) {
      id = it->second;
    }
    if (id >= 0) {
      if (unk_pending) ids.push_back(unk_id_);
      unk_pending = false;
      ids.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (size_t k = start; k < i; ++k) all &= fallback_id_[static_cast<unsigned char>(word[k])] >= 0;
      if (all) {
        for (size_t k = start; k < i; ++k) ids.push_back(fallback_id_[static_cast<unsigned char>(word[k])]);
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no unk token: the reference drops the character
    if (unk_pending && !fuse_unk_) ids.push_back(unk_id_);
    unk_pending = true;
  }
  if (unk_pending) ids.push_back(unk_id_);
}

}  // namespace lg::tokenizer
