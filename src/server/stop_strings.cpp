#include "server/stop_strings.h"

#include <algorithm>

namespace lg::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return {};
  pending_ += text;
  // The earliest stop wins, as when the whole text is searched at once.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
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
  return out;
}

std::string StopMatcher::finish() {
  std::string out = stopped_ ? std::string() : pending_;
  pending_.clear();
  return out;
}

}  // namespace lg::server
