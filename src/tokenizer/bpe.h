// The BPE model of tokenizer.json (HF tokenizers `models::bpe::BPE`, Sennrich et al. 2016
// "Neural Machine Translation of Rare Words with Subword Units"): a pre-token starts as one
// symbol per unit and the adjacent pair with the lowest merge rank is merged (leftmost first on
// ties) until no pair has a merge. Two alphabets of units:
//  - byte-level (GPT-2 style: Qwen, Llama 3): one symbol per byte. tokenizer.json writes bytes as
//    printable code points; lanegraph translates vocab and merges once at load and runs on raw
//    bytes (this file and byte_level.h);
//  - Unicode (SentencePiece style: Llama 2, Mistral, Gemma): one symbol per character, with
//    byte_fallback to "<0xXX>" tokens and the unk token (fuse_unk) for characters outside the
//    vocab (sentencepiece_bpe.cpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_json.h"
#include "tokenizer/vocab.h"

namespace lg::tokenizer {

/// Merge table and vocabulary of one BPE model, with a cache of merged pre-tokens.
class Bpe {
 public:
  /// What a symbol of a fresh pre-token is.
  enum class Alphabet { byte_level, unicode };

  /// Builds the model from tokenizer.json's "model" settings and its vocab and merges (as
  /// tokenizer_json.h reads them). Throws lg::Error naming `file` and the field (model.vocab,
  /// model.merges[i], model.dropout, ...) for anything malformed or not supported: dropout, a
  /// subword prefix/suffix, a merge whose parts or result are not in the vocab, an unk_token not
  /// in the vocab; for the byte-level alphabet also byte_fallback and a vocab missing one of the
  /// 256 single-byte tokens.
  Bpe(const nlohmann::json& model, Vocab vocab, const MergeList& merges,
      const std::string& file, Alphabet alphabet);

  /// The same from a "model" object that holds its vocab and merges (tests).
  Bpe(const nlohmann::json& model, const std::string& file, Alphabet alphabet = Alphabet::byte_level);

  /// Appends the ids of one pre-token (raw bytes for byte-level, UTF-8 text for Unicode;
  /// non-empty) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  /// The same without the cache (tests compare both; the benchmark measures the cache's worth).
  void encode_word_uncached(std::string_view word, std::vector<int32_t>& out) const;

  /// Vocabulary in tokenizer.json form (byte-level text for the byte-level alphabet) <-> id.
  const Vocab& vocab() const { return vocab_; }

  Alphabet alphabet() const { return alphabet_; }

 private:
  struct Parsed;
  static Parsed parse_model(const nlohmann::json& model, const std::string& file);
  Bpe(Parsed&& parsed, const std::string& file, Alphabet alphabet);

  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  std::optional<Merge> find_merge(int32_t left, int32_t right) const;
  void read_merges(const MergeList& merges, const std::string& file);

  // encode_word without the split at spaces.
  void encode_cached(std::string_view word, std::vector<int32_t>& out) const;

  // The first symbols of a word, before any merge.
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;
  // Unicode alphabet (sentencepiece_bpe.cpp): characters, byte fallback and unk.
  void load_unicode_alphabet(const nlohmann::json& model, const std::string& file);
  void unicode_symbols(std::string_view word, std::vector<int32_t>& ids) const;
  // A whole text (no pre-tokenizer, as Llama 2 and Gemma ship) cut before its runs of "▁" where
  // no merge can join across, each piece through the cache (sentencepiece_bpe.cpp).
  void find_space_glue(const MergeList& merges);
  void encode_at_spaces(std::string_view word, std::vector<int32_t>& out) const;
  int32_t char_token(char32_t c) const;

  Alphabet alphabet_;
  Vocab vocab_;  // tokenizer.json text <-> id
  // ignore_merges: a whole pre-token in the vocab is one token. encode_word sees raw bytes for the
  // byte-level alphabet, so those tokens are indexed by their bytes too.
  bool ignore_merges_ = false;
  Vocab byte_vocab_;

  // Byte-level alphabet: the id of each byte.
  int32_t byte_id_[256];

  // Unicode alphabet: single-character tokens, "<0xXX>" byte tokens (-1 = absent), unk.
  int32_t ascii_id_[128];
  std::unordered_map<char32_t, int32_t> char_id_;  // non-ASCII characters
  bool byte_fallback_ = false;
  int32_t fallback_id_[256];
  int32_t unk_id_ = -1;
  std::string unk_text_;
  bool fuse_unk_ = false;
  // Characters some merge result has right before a "▁" (Gemma 3: '>' in ">▁</"); a cut before
  // "▁" is exact when the character before it is none of them (see sentencepiece_bpe.cpp).
  bool split_at_spaces_ = false;
  std::vector<char32_t> space_glue_;
  bool unknown_glues_ = false;  // a character outside the vocab before "▁" blocks the cut

  // Open-addressing table: (left id << 32 | right id) -> Merge. Keys never equal kEmpty because
  // ids are non-negative int32.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<uint64_t> merge_keys_;
  std::vector<Merge> merge_values_;
  uint64_t merge_mask_ = 0;

  // Cache of merged pre-tokens: an open-addressing table over two arenas (word bytes, ids), so a
  // hit costs one hash, one or two probes and a memcmp, with no allocation. When half full it
  // starts over, which keeps memory bounded on endless input.
  struct CacheSlot {
    uint64_t hash = 0;  // 0 = empty
    uint32_t word_offset = 0;
    uint32_t ids_offset = 0;
    uint16_t word_length = 0;
    uint16_t ids_length = 0;
  };
  bool cache_find(uint64_t hash, std::string_view word, std::vector<int32_t>& out) const;
  void cache_insert(uint64_t hash, std::string_view word, std::span<const int32_t> ids) const;
  mutable std::mutex cache_mutex_;
  mutable std::vector<CacheSlot> cache_slots_;
  mutable std::string cache_words_;
  mutable std::vector<int32_t> cache_ids_;
  mutable size_t cache_used_ = 0;
};

}  // namespace lg::tokenizer
