#include "runtime/cuda/launch_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace lg::cuda {

LaunchProfile::LaunchProfile(cudaStream_t s) : s_(s) { mark(""); }

void LaunchProfile::mark(const std::string& label) {
  events_.push_back(std::make_unique<Event>());
  events_.back()->record(s_);
  labels_.push_back(label);
}

std::string LaunchProfile::report(const std::string& title) const {
  std::map<std::string, std::pair<double, int>> per;
  double total = 0;
  for (size_t j = 1; j < events_.size(); ++j) {
    const double ms = events_[j]->elapsed_ms_since(*events_[j - 1]);
    auto& [sum, n] = per[labels_[j]];
    sum += ms;
    ++n;
    total += ms;
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [k, v] : per) order.push_back({v.first, k});
  std::sort(order.rbegin(), order.rend());
  std::string out = fmt::format("profile {}: {} launches, {:.3f} ms (events between kernels, no graph)\n", title,
                                events_.size() - 1, total);
  for (const auto& [ms, k] : order)
    out += fmt::format("  {:8.3f} ms {:5.1f}%  {:<24} x{}\n", ms, 100 * ms / total, k, per.at(k).second);
  return out;
}

}  // namespace lg::cuda
