// A BPE vocabulary: token text <-> id, built once at load. Gemma 3 has 262,144 tokens, so this is
// a flat open-addressing index over the texts (one allocation per long token at most) instead of
// a node-based hash map.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lg::tokenizer {

/// Token texts by id, with an index from text to id. Not thread-safe to build; const use is.
class Vocab {
 public:
  /// Ids are below this (2^24; the largest vocabularies have ~256k tokens), so a stray huge id in
  /// a file cannot make the per-id tables take gigabytes.
  static constexpr int64_t kMaxId = int64_t{1} << 24;

  /// Adds a token (0 <= id < kMaxId). A text given twice keeps its last id (as a JSON object with
  /// a duplicate key).
  void add(std::string text, int32_t id);

  /// The id of `text`, or nullopt.
  std::optional<int32_t> find(std::string_view text) const;

  /// The text of `id`, or nullptr for an id with no token.
  const std::string* text(int32_t id) const;

  /// Max id + 1 (0 when empty).
  size_t id_limit() const { return limit_; }

  /// Number of tokens.
  size_t size() const { return count_; }

 private:
  size_t slot_of(std::string_view text) const;  // the slot holding text, or the empty one it would take
  void grow();
  void erase_slot(size_t slot);

  // A slot holds an id (-1 = empty) and bits of its text's hash, so that a probe rarely has to
  // read a text it does not want.
  struct Slot {
    int32_t id;
    uint32_t tag;
  };
  std::vector<std::string> texts_;  // by id
  std::vector<uint8_t> present_;    // by id
  std::vector<Slot> slots_;
  size_t count_ = 0;
  size_t limit_ = 0;
};

}  // namespace lg::tokenizer
