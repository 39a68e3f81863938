#include "support/startup_clock.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lg {

bool startup_times_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LG_STARTUP_TIMES");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

StartupClock::StartupClock(std::string who) : who_(std::move(who)), start_(clock::now()), last_(start_) {}

std::string StartupClock::line(std::string_view phase, double s, std::string_view note) const {
  char secs[32];
  std::snprintf(secs, sizeof secs, " %.3f s", s);
  std::string l = "lg: startup: " + who_ + ": " + std::string(phase) + secs;
  if (!note.empty()) l += " (" + std::string(note) + ")";
  return l + "\n";
}

double StartupClock::mark(std::string_view phase, std::string_view note) {
  const double s = mark_later(phase, note);
  flush();
  return s;
}

double StartupClock::mark_later(std::string_view phase, std::string_view note) {
  const auto now = clock::now();
  const double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  if (startup_times_enabled()) held_.push_back(line(phase, s, note));
  return s;
}

void StartupClock::flush() {
  for (const std::string& l : held_) std::fputs(l.c_str(), stderr);
  held_.clear();
}

double StartupClock::lap() const { return std::chrono::duration<double>(clock::now() - last_).count(); }

double StartupClock::total() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

}  // namespace lg
