#include "support/did_you_mean.h"

#include <algorithm>

namespace lg {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {
/// Edits between a and b where swapping two adjacent characters is one ("veiw", "weigth"): the
/// optimal string alignment distance, which counts the typos people make as they make them. Three
/// rows of b's length: did_you_mean bounds both lengths.
size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string did_you_mean(std::string_view name, std::vector<std::string> candidates) {
  // A name of one or two letters is a different name, not a typo, of any other short one; one
  // past kMaxSuggested letters is no typo of a name anyone wrote (and would cost its square).
  if (name.size() < 3 || name.size() > kMaxSuggested) return "";
  std::sort(candidates.begin(), candidates.end());
  const size_t most = name.size() / 3;
  const std::string* best = nullptr;
  size_t best_d = most + 1;
  for (const std::string& c : candidates) {
    // The same first letter: a name that differs there is another word (bos_token_id is no
    // typo of eos_token_id, nor intermediate_size of moe_intermediate_size).
    if (c == name || c.size() > kMaxSuggested || c[0] != name[0]) continue;
    // Cheap bound first: the lengths alone cost |len difference| edits.
    const size_t gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (gap >= best_d) continue;
    if (const size_t d = typo_distance(name, c); d < best_d) best_d = d, best = &c;
  }
  return best ? "; did you mean '" + *best + "'?" : "";
}

}  // namespace lg
