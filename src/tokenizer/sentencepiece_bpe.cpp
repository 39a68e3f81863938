// The Unicode alphabet of a BPE model, as SentencePiece-converted tokenizers ship it (Llama 2,
// Mistral, Gemma): a word starts as one symbol per character; a character outside the vocab
// becomes its UTF-8 bytes as "<0x0A>"-style tokens when byte_fallback is on and every byte has
// one, else the unk token (consecutive unknowns fused into one with fuse_unk), else it is
// dropped. Follows HF tokenizers' BPE::merge_word, including its order: byte-fallback tokens are
// added before an unk still pending from earlier characters.
#include <algorithm>
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
    unk_text_ = model["unk_token"].get<std::string>();
  }
}

// Why the cut is exact: BPE symbols are always runs of the word, and a merge makes one symbol of
// two neighbours whose text is the merge's result. A symbol spanning a cut before "▁" would have,
// somewhere in its text, the text of the symbol that ended at the cut's left followed by "▁". If
// no merge result has "▁" right after a character c, no merge ever joins across a cut whose left
// character is c, so the merges on each side are those BPE makes on that side alone, in the same
// order (lowest rank, then leftmost, restricted to the side). The symbol left of a cut ends with
// the character itself when it is a token; otherwise with the last character of "<0xXX>" (byte
// fallback) or of the unk token. Runs of "▁" are never cut inside ("▁▁" tokens exist), and the "▁"
// at a cut is a token, so an unk pending on the left is flushed there in both computations.
void Bpe::find_space_glue(const MergeList& merges) {
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 ▁
  if (ignore_merges_ || char_token(0x2581) < 0) return;  // whole-word lookup sees the whole text
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    joined.assign(merges.left(i)).append(merges.right(i));
    for (size_t at = joined.find(kSpace, 1); at != std::string::npos; at = joined.find(kSpace, at + 1)) {
      size_t start = at - 1;
      while (start > 0 && (static_cast<unsigned char>(joined[start]) & 0xC0) == 0x80) --start;
      size_t k = start;
      const char32_t c = utf8::next_code_point(joined, k);
      if (c != 0x2581 && std::find(space_glue_.begin(), space_glue_.end(), c) == space_glue_.end())
        space_glue_.push_back(c);
    }
  }
  auto glues = [&](char32_t c) { return std::find(space_glue_.begin(), space_glue_.end(), c) != space_glue_.end(); };
  unknown_glues_ = (byte_fallback_ && glues('>'));
  if (unk_id_ >= 0 && !unk_text_.empty()) {
    size_t start = unk_text_.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(unk_text_[start]) & 0xC0) == 0x80) --start;
    unknown_glues_ |= glues(utf8::next_code_point(unk_text_, start));
  }
  split_at_spaces_ = true;
}

int32_t Bpe::char_token(char32_t c) const {
  if (c < 128) return ascii_id_[c];
  const auto it = char_id_.find(c);
  return it == char_id_.end() ? -1 : it->second;
}

void Bpe::encode_at_spaces(std::string_view word, std::vector<int32_t>& out) const {
  size_t piece = 0;        // start of the current piece
  char32_t previous = 0;   // the character before i
  for (size_t i = 0; i < word.size();) {
    const size_t at = i;
    const char32_t c = utf8::next_code_point(word, i);
    if (c == 0x2581 && at > 0 && previous != 0x2581) {
      const bool blocked = char_token(previous) >= 0
                               ? std::find(space_glue_.begin(), space_glue_.end(), previous) != space_glue_.end()
                               : unknown_glues_;
      if (!blocked) {
        encode_cached(word.substr(piece, at - piece), out);
        piece = at;
      }
    }
    previous = c;
  }
  encode_cached(word.substr(piece), out);
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
