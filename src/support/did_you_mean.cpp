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
/// optimal string alignment distance, which counts the typos people make as they make them.
size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}
}  // namespace

std::string did_you_mean(std::string_view name, std::vector<std::string> candidates) {
  // A name of one or two letters is a different name, not a typo, of any other short one.
  if (name.size() < 3) return "";
  std::sort(candidates.begin(), candidates.end());
  const size_t most = name.size() / 3;
  const std::string* best = nullptr;
  size_t best_d = most + 1;
  for (const std::string& c : candidates) {
    if (c == name) continue;
    // Cheap bound first: the lengths alone cost |len difference| edits.
    const size_t gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (gap >= best_d) continue;
    if (const size_t d = typo_distance(name, c); d < best_d) best_d = d, best = &c;
  }
  return best ? "; did you mean '" + *best + "'?" : "";
}

}  // namespace lg
