#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

// Rust char::is_whitespace: the Unicode White_Space property.
bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// A word character for single_word: the reference tests its matches against the Rust regex `\w`
// (tokenizers' added_vocabulary.rs, ^\w / \w$), which in Unicode mode is Alphabetic, every mark
// (M*), decimal digits (Nd), connector punctuation (Pc, '_' among them) and the joiners U+200C /
// U+200D. Alphabetic is the letters, Nl and Other_Alphabetic, whose code points are marks (here
// already) but for the circled and squared Latin letters. So a mark before a single_word token
// keeps it inside a word ("e" + U+0301 + token) and a superscript digit (No) does not.
bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// The code point that ends text[0, end) (end > 0, valid UTF-8).
char32_t last_code_point(std::string_view text, size_t end, size_t* start_out) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  if (start_out) *start_out = start;
  return utf8::next_code_point(text, i);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const auto& t : tokens)
    if (!t.content.empty()) tokens_.push_back(t);
  // Build with a map per node, then flatten into sorted edge arrays.
  std::vector<std::map<unsigned char, uint32_t>> children(1);
  std::vector<int32_t> ends(1, -1);
  for (uint32_t k = 0; k < tokens_.size(); ++k) {
    uint32_t node = 0;
    for (const char ch : tokens_[k].content) {
      const auto b = static_cast<unsigned char>(ch);
      auto it = children[node].find(b);
      if (it == children[node].end()) {
        it = children[node].emplace(b, static_cast<uint32_t>(children.size())).first;
        children.emplace_back();
        ends.push_back(-1);
      }
      node = it->second;
    }
    // The same content twice: the first entry wins (as before the trie).
    if (ends[node] < 0) ends[node] = static_cast<int32_t>(k);
  }
  nodes_.resize(children.size());
  for (uint32_t n = 0; n < children.size(); ++n) {
    nodes_[n].token = ends[n];
    if (n == 0) {
      for (const auto& [b, child] : children[0]) root_[b] = child;
      continue;
    }
    nodes_[n].first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[n].edge_count = static_cast<uint32_t>(children[n].size());
    for (const auto& [b, child] : children[n]) edges_.push_back({b, child});
  }
}

const AddedToken* AddedTokenMatcher::longest_at(std::string_view text, size_t i) const {
  uint32_t node = root_[static_cast<unsigned char>(text[i])];
  const AddedToken* best = nullptr;
  while (node != 0) {
    const Node& n = nodes_[node];
    if (n.token >= 0) best = &tokens_[static_cast<size_t>(n.token)];
    if (++i >= text.size() || n.edge_count == 0) break;
    const Edge* first = edges_.data() + n.first_edge;
    const Edge* last = first + n.edge_count;
    const auto b = static_cast<unsigned char>(text[i]);
    const Edge* e = std::lower_bound(first, last, b, [](const Edge& x, unsigned char v) { return x.byte < v; });
    node = (e != last && e->byte == b) ? e->node : 0;
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t emitted = 0;  // end of what has been emitted
  size_t i = 0;        // where the search for the next match resumes
  const size_t n = text.size();
  while (i < n) {
    // Most bytes start no token: one table lookup, no call.
    const AddedToken* hit = root_[static_cast<unsigned char>(text[i])] ? longest_at(text, i) : nullptr;
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    i = stop;
    if (hit->single_word) {
      const bool word_before = start > 0 && is_word_char(last_code_point(text, start, nullptr));
      size_t j = stop;
      const bool word_after = stop < n && is_word_char(utf8::next_code_point(text, j));
      if (word_before || word_after) continue;
    }
    if (hit->lstrip) {
      size_t s = start;
      while (s > emitted) {
        size_t prev;
        if (!is_whitespace(last_code_point(text, s, &prev))) break;
        s = prev;
      }
      start = s;
    }
    if (hit->rstrip) {
      while (stop < n) {
        size_t j = stop;
        if (!is_whitespace(utf8::next_code_point(text, j))) break;
        stop = j;
      }
      i = stop;
    }
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), hit->id});
    emitted = stop;
  }
  if (emitted < n) out.push_back({text.substr(emitted), -1});
}

}  // namespace lg::tokenizer
