#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/fnv1a.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

constexpr size_t kCacheSlots = size_t{1} << 18;  // 262,144 slots (6 MiB), half of them used at most
constexpr size_t kCacheMaxWordBytes = 256;       // longer pre-tokens are rare; don't cache them
constexpr size_t kSplitMinBytes = 32;            // shorter words go to the cache whole

// FNV-1a, 64-bit: pre-tokens are short, so a byte loop beats block hashes here. Never 0, which
// marks an empty slot.
uint64_t hash_word(std::string_view w) { return fnv1a64(w) | 1; }

uint64_t mix(uint64_t k) {  // splitmix64 finalizer: ids are small, so spread them
  k ^= k >> 31;
  k *= 0x7fb5d329728ea185ull;
  k ^= k >> 27;
  k *= 0x81dadef4bc2dd44dull;
  k ^= k >> 33;
  return k;
}

std::string field_error(const std::string& file, const std::string& field, const std::string& what) {
  return file + ": " + field + ": " + what;
}

}  // namespace

struct Bpe::Parsed {
  nlohmann::json settings;
  TokenizerJson json;
};

// A DOM "model" object split into its settings and its vocab and merges, read as tokenizer.json
// reads them.
Bpe::Parsed Bpe::parse_model(const nlohmann::json& model, const std::string& file) {
  Bpe::Parsed p{model, TokenizerJson::parse(nlohmann::json{{"model", model}}.dump(), file)};
  if (!p.json.has_vocab) throw Error(field_error(file, "model.vocab", "missing or not an object of token -> id"));
  if (!p.json.has_merges) throw Error(field_error(file, "model.merges", "missing or not an array"));
  p.settings.erase("vocab");
  p.settings.erase("merges");
  return p;
}

Bpe::Bpe(const nlohmann::json& model, const std::string& file, Alphabet alphabet)
    : Bpe(parse_model(model, file), file, alphabet) {}

Bpe::Bpe(Parsed&& parsed, const std::string& file, Alphabet alphabet)
    : Bpe(parsed.settings, std::move(parsed.json.vocab), parsed.json.merges, file, alphabet) {}

Bpe::Bpe(const nlohmann::json& model, Vocab vocab, const MergeList& merges,
         const std::string& file, Alphabet alphabet)
    : alphabet_(alphabet), vocab_(std::move(vocab)) {
  auto must_be_unset = [&](const char* key, auto&& is_unset) {
    if (model.contains(key) && !model[key].is_null() && !is_unset(model[key]))
      throw Error(field_error(file, std::string("model.") + key,
                              "unsupported value " + model[key].dump() + " (lanegraph supports BPE without it)"));
  };
  must_be_unset("dropout", [](const nlohmann::json& v) { return v.is_number() && v.get<double>() == 0.0; });
  must_be_unset("continuing_subword_prefix", [](const nlohmann::json& v) { return v == ""; });
  must_be_unset("end_of_word_suffix", [](const nlohmann::json& v) { return v == ""; });
  if (alphabet == Alphabet::byte_level)
    must_be_unset("byte_fallback", [](const nlohmann::json& v) { return v == false; });
  if (model.contains("ignore_merges") && !model["ignore_merges"].is_null()) {
    if (!model["ignore_merges"].is_boolean())
      throw Error(field_error(file, "model.ignore_merges", "expected true or false"));
    ignore_merges_ = model["ignore_merges"].get<bool>();
  }
  if (vocab_.size() == 0) throw Error(field_error(file, "model.vocab", "missing or empty"));

  if (alphabet == Alphabet::byte_level) {
    std::fill(std::begin(byte_id_), std::end(byte_id_), -1);
    for (size_t i = 0; i < vocab_.id_limit(); ++i) {
      const std::string* token = vocab_.text(static_cast<int32_t>(i));
      // Only single bytes are needed to start BPE, and whole words only for ignore_merges.
      if (!token || (token->size() > 2 && !ignore_merges_)) continue;  // a byte's char is <= 2 UTF-8 bytes
      if (auto bytes = byte_level::to_bytes(*token)) {
        if (bytes->size() == 1) byte_id_[static_cast<unsigned char>((*bytes)[0])] = static_cast<int32_t>(i);
        if (ignore_merges_) byte_vocab_.add(std::move(*bytes), static_cast<int32_t>(i));
      }
    }
    for (int b = 0; b < 256; ++b)
      if (byte_id_[b] < 0)
        throw Error(field_error(file, "model.vocab",
                                "no token for byte " + std::to_string(b) + " (\"" +
                                    byte_level::from_bytes(std::string(1, static_cast<char>(b))) +
                                    "\"): a byte-level BPE needs all 256"));
  } else {
    load_unicode_alphabet(model, file);
  }
  read_merges(merges, file);
  if (alphabet == Alphabet::unicode) find_space_glue(merges);
}

void Bpe::read_merges(const MergeList& merges, const std::string& file) {
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity <<= 1;
  merge_keys_.assign(capacity, kEmpty);
  merge_values_.assign(capacity, Merge{0, 0});
  merge_mask_ = capacity - 1;
  std::string joined;  // reused: this loop runs 515k times for Gemma 3
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view left = merges.left(rank), right = merges.right(rank);
    joined.assign(left).append(right);
    const auto l = vocab_.find(left), r = vocab_.find(right), n = vocab_.find(joined);
    if (!l || !r || !n)
      throw Error(field_error(file, "model.merges[" + std::to_string(rank) + "]",
                              "\"" + std::string(!l ? left : !r ? right : std::string_view(joined)) +
                                  "\" is not in model.vocab"));
    // Later duplicates overwrite earlier ones, as when the reference collects merges into a map.
    const uint64_t key = (uint64_t(uint32_t(*l)) << 32) | uint32_t(*r);
    uint64_t slot = mix(key) & merge_mask_;
    while (merge_keys_[slot] != kEmpty && merge_keys_[slot] != key) slot = (slot + 1) & merge_mask_;
    merge_keys_[slot] = key;
    merge_values_[slot] = Merge{static_cast<uint32_t>(rank), *n};
  }
}

std::optional<Bpe::Merge> Bpe::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  uint64_t slot = mix(key) & merge_mask_;
  while (true) {
    const uint64_t k = merge_keys_[slot];
    if (k == key) return merge_values_[slot];
    if (k == kEmpty) return std::nullopt;
    slot = (slot + 1) & merge_mask_;
  }
}

void Bpe::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  if (alphabet_ == Alphabet::unicode) {
    unicode_symbols(word, ids);
    return;
  }
  for (const char c : word) ids.push_back(byte_id_[static_cast<unsigned char>(c)]);
}

void Bpe::encode_word_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (alphabet_ == Alphabet::byte_level && word.size() == 1) {
    out.push_back(byte_id_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    if (auto id = (alphabet_ == Alphabet::byte_level ? byte_vocab_ : vocab_).find(word)) {
      out.push_back(*id);
      return;
    }
  }
  thread_local std::vector<int32_t> first;
  first.clear();
  initial_symbols(word, first);
  const size_t n = first.size();
  if (n <= 1) {
    out.insert(out.end(), first.begin(), first.end());
    return;
  }
  // Symbols form a doubly linked list over the word; a merge absorbs the right neighbour.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;  // min-heap on (rank, pos) through std::greater
  const auto push = [](Candidate c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  symbols.resize(n);
  for (size_t i = 0; i < n; ++i)
    symbols[i] = {first[i], static_cast<int32_t>(i) - 1, i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  heap.clear();
  for (size_t i = 0; i + 1 < n; ++i)
    if (auto m = find_merge(symbols[i].id, symbols[i + 1].id)) push({m->rank, static_cast<int32_t>(i), m->id});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.id < 0 || left.next < 0) continue;  // absorbed, or nothing to its right any more
    Symbol& right = symbols[left.next];
    // Stale entry: the pair at this position changed since it was queued.
    const auto current = find_merge(left.id, right.id);
    if (!current || current->id != top.id) continue;
    left.id = top.id;
    right.id = -1;  // absorbed
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0)
      if (auto m = find_merge(symbols[left.prev].id, left.id)) push({m->rank, left.prev, m->id});
    if (left.next >= 0)
      if (auto m = find_merge(left.id, symbols[left.next].id)) push({m->rank, top.pos, m->id});
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

bool Bpe::cache_find(uint64_t hash, std::string_view word, std::vector<int32_t>& out) const {
  if (cache_slots_.empty()) return false;
  const size_t mask = cache_slots_.size() - 1;
  for (size_t slot = mix(hash) & mask;; slot = (slot + 1) & mask) {
    const CacheSlot& s = cache_slots_[slot];
    if (s.hash == 0) return false;
    if (s.hash == hash && s.word_length == word.size() &&
        std::memcmp(cache_words_.data() + s.word_offset, word.data(), word.size()) == 0) {
      out.insert(out.end(), cache_ids_.begin() + s.ids_offset, cache_ids_.begin() + s.ids_offset + s.ids_length);
      return true;
    }
  }
}

void Bpe::cache_insert(uint64_t hash, std::string_view word, std::span<const int32_t> ids) const {
  if (cache_slots_.empty() || cache_used_ >= kCacheSlots / 2) {
    cache_slots_.assign(kCacheSlots, CacheSlot{});
    cache_words_.clear();
    cache_ids_.clear();
    cache_used_ = 0;
  }
  const size_t mask = cache_slots_.size() - 1;
  size_t slot = mix(hash) & mask;
  while (cache_slots_[slot].hash != 0) slot = (slot + 1) & mask;
  cache_slots_[slot] = CacheSlot{hash, static_cast<uint32_t>(cache_words_.size()),
                                 static_cast<uint32_t>(cache_ids_.size()), static_cast<uint16_t>(word.size()),
                                 static_cast<uint16_t>(ids.size())};
  cache_words_.append(word);
  cache_ids_.insert(cache_ids_.end(), ids.begin(), ids.end());
  ++cache_used_;
}

void Bpe::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (split_at_spaces_ && word.size() > kSplitMinBytes) {
    encode_at_spaces(word, out);
    return;
  }
  encode_cached(word, out);
}

void Bpe::encode_cached(std::string_view word, std::vector<int32_t>& out) const {
  if ((word.size() == 1 && alphabet_ == Alphabet::byte_level) || word.size() > kCacheMaxWordBytes) {
    encode_word_uncached(word, out);
    return;
  }
  const uint64_t hash = hash_word(word);
  {
    std::lock_guard lock(cache_mutex_);
    if (cache_find(hash, word, out)) return;
  }
  const size_t first = out.size();
  encode_word_uncached(word, out);
  std::lock_guard lock(cache_mutex_);
  cache_insert(hash, word, std::span<const int32_t>(out).subspan(first));
}

}  // namespace lg::tokenizer
