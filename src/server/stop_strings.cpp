#include "server/stop_strings.h"

#include <algorithm>

namespace lg::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopMatcher::push(const std::string& text, bool match) {
  if (stopped_) return {};
  pending_ += text;
  if (!match) unmatched_ = pending_.size();
  // The stop that completes first wins (smallest end; on a tie the longer one, which starts
  // earlier): the only rule a stream can apply that gives the same cut however text is split.
  // Only a stop that ends past the unmatched bytes counts.
  size_t cut = std::string::npos, cut_end = std::string::npos;
  const std::string* cut_by = nullptr;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s, unmatched_ >= s.size() ? unmatched_ - s.size() + 1 : 0);
    if (at == std::string::npos) continue;
    const size_t end = at + s.size();
    if (end < cut_end || (end == cut_end && at < cut)) {
      cut = at;
      cut_end = end;
      cut_by = &s;
    }
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    matched_ = *cut_by;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    const size_t most = std::min(s.size() - 1, pending_.size());
    for (size_t k = most; k > hold; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  unmatched_ -= std::min(unmatched_, out.size());
  return out;
}

std::string StopMatcher::finish() {
  std::string out = stopped_ ? std::string() : pending_;
  pending_.clear();
  unmatched_ = 0;
  return out;
}

}  // namespace lg::server
