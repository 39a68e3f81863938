#include "support/startup_clock.h"

#include <cstdio>
#include <cstdlib>

namespace lg {

bool startup_times_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LG_STARTUP_TIMES");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

StartupClock::StartupClock(std::string who) : who_(std::move(who)), start_(clock::now()), last_(start_) {}

double StartupClock::mark(std::string_view phase, std::string_view note) {
  const auto now = clock::now();
  const double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  if (startup_times_enabled())
    std::fprintf(stderr, "lg: startup: %s: %.*s %.3f s%s%.*s%s\n", who_.c_str(), static_cast<int>(phase.size()),
                 phase.data(), s, note.empty() ? "" : " (", static_cast<int>(note.size()), note.data(),
                 note.empty() ? "" : ")");
  return s;
}

double StartupClock::lap() const { return std::chrono::duration<double>(clock::now() - last_).count(); }

double StartupClock::total() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

}  // namespace lg
