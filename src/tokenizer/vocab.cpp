#include "tokenizer/vocab.h"

#include <algorithm>
#include <functional>

namespace lg::tokenizer {
namespace {

uint64_t hash_text(std::string_view s) { return std::hash<std::string_view>{}(s); }
uint32_t tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32); }

}  // namespace

size_t Vocab::slot_of(std::string_view text) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t h = hash_text(text);
  const uint32_t tag = tag_of(h);
  for (size_t s = h & mask;; s = (s + 1) & mask) {
    const Slot& slot = slots_[s];
    if (slot.id < 0 || (slot.tag == tag && texts_[static_cast<size_t>(slot.id)] == text)) return s;
  }
}

void Vocab::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{-1, 0});
  for (const Slot& slot : old)
    if (slot.id >= 0) slots_[slot_of(texts_[static_cast<size_t>(slot.id)])] = slot;
}

void Vocab::erase_slot(size_t t) {
  // Linear probing: take the entry out, then reinsert the rest of its cluster.
  const size_t mask = slots_.size() - 1;
  slots_[t].id = -1;
  for (size_t j = (t + 1) & mask; slots_[j].id >= 0; j = (j + 1) & mask) {
    const Slot moved = slots_[j];
    slots_[j].id = -1;
    slots_[slot_of(texts_[static_cast<size_t>(moved.id)])] = moved;
  }
}

void Vocab::add(std::string text, int32_t id) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const auto i = static_cast<size_t>(id);
  if (i < texts_.size() && present_[i]) {  // the id had a text: replace it
    if (texts_[i] == text) return;
    erase_slot(slot_of(texts_[i]));
    present_[i] = 0;
    --count_;
  }
  const size_t s = slot_of(text);
  if (slots_[s].id >= 0) {  // the text had another id: it moves here
    const auto old = static_cast<size_t>(slots_[s].id);
    present_[old] = 0;
    texts_[old].clear();
    --count_;
  }
  if (i >= texts_.size()) {
    texts_.resize(std::max(i + 1, texts_.size() * 2));
    present_.resize(texts_.size(), 0);
  }
  slots_[s] = Slot{id, tag_of(hash_text(text))};
  texts_[i] = std::move(text);
  present_[i] = 1;
  limit_ = std::max(limit_, i + 1);
  ++count_;
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
  if (slots_.empty()) return std::nullopt;
  const int32_t id = slots_[slot_of(text)].id;
  if (id < 0) return std::nullopt;
  return id;
}

const std::string* Vocab::text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= limit_ || !present_[static_cast<size_t>(id)]) return nullptr;
  return &texts_[static_cast<size_t>(id)];
}

}  // namespace lg::tokenizer
