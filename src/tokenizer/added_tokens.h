// Added tokens (tokenizer.json "added_tokens": <|endoftext|>, <|im_start|>, <think>, ...): they are
// found in the text before anything else, so a special token written in a prompt becomes its one
// id instead of being split by BPE. Matching follows HF tokenizers' AddedVocabulary: leftmost-
// longest, non-overlapping, then the single_word / lstrip / rstrip flags. The tokens sit in a
// byte trie, so a position costs one table lookup when no token starts there and a walk as deep
// as the longest match otherwise (Gemma 3 has 6,415 added tokens, 6,322 of them starting "<").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lg::tokenizer {

/// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;      // a control token (decode may skip it; matched in text regardless)
  bool single_word = false;  // only matched when not inside a word
  bool lstrip = false;       // also swallows the whitespace on its left
  bool rstrip = false;       // also swallows the whitespace on its right
  bool normalized = false;   // matched in the normalized text instead of the raw text
};

/// A piece of the input: either an added token (id >= 0) or text to pre-tokenize (id == -1).
struct Segment {
  std::string_view text;
  int32_t id = -1;
};

/// Finds a set of added tokens in text.
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  /// Tokens with empty content are ignored (they can never match).
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  bool empty() const { return tokens_.empty(); }

  /// Appends the segments of `text` (valid UTF-8) to `out`: added-token matches and the runs of
  /// plain text between them, covering `text` in order (stripped whitespace goes to the token).
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  // The token matched longest at text[i...], or nullptr.
  const AddedToken* longest_at(std::string_view text, size_t i) const;

  std::vector<AddedToken> tokens_;
  // Byte trie: node 0 is the root, whose children are the dense array root_; every other node's
  // children are edges_[first_edge, first_edge + edge_count), sorted by byte.
  struct Node {
    int32_t token = -1;  // index into tokens_ of the token ending here
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
  };
  struct Edge {
    unsigned char byte;
    uint32_t node;
  };
  std::array<uint32_t, 256> root_{};  // 0 = no child
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
};

}  // namespace lg::tokenizer
