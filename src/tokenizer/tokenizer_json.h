// Reading tokenizer.json in one SAX pass: the BPE model's "vocab" (Gemma 3: 262,144 entries) and
// "merges" (514,906) go straight into compact tables, everything else (a few KB of component
// settings, the added tokens) into a JSON DOM. Building the DOM for the whole 33 MB file took most
// of the load time (a std::map node per vocab entry, an array per merge).
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"

namespace lg::tokenizer {

/// The merges of a BPE model: (left, right) by rank, the texts back to back in one buffer.
class MergeList {
 public:
  void add(std::string_view left, std::string_view right) {
    chars_.append(left);
    bounds_.push_back(static_cast<uint32_t>(chars_.size()));
    chars_.append(right);
    bounds_.push_back(static_cast<uint32_t>(chars_.size()));
  }
  size_t size() const { return bounds_.size() / 2; }
  std::string_view left(size_t i) const { return span(i == 0 ? 0 : bounds_[2 * i - 1], bounds_[2 * i]); }
  std::string_view right(size_t i) const { return span(bounds_[2 * i], bounds_[2 * i + 1]); }

 private:
  std::string_view span(uint32_t a, uint32_t b) const { return std::string_view(chars_).substr(a, b - a); }
  std::string chars_;
  std::vector<uint32_t> bounds_;  // per merge: end of left, end of right
};

/// tokenizer.json, read.
struct TokenizerJson {
  nlohmann::json doc;  ///< the file without model.vocab and model.merges when those were captured
  bool has_vocab = false;   ///< model.vocab was an object of text -> id, now in `vocab`
  bool has_merges = false;  ///< model.merges was an array, now in `merges`
  Vocab vocab;
  MergeList merges;

  /// Parses `in`; `file` names it in errors. Throws lg::Error for invalid JSON (with the byte
  /// offset) and for a malformed vocab or merges entry (naming "model.vocab[\"tok\"]" or
  /// "model.merges[i]").
  static TokenizerJson parse(std::istream& in, const std::string& file);
  static TokenizerJson parse(std::string_view text, const std::string& file);
};

}  // namespace lg::tokenizer
