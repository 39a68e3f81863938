// Opt-in start-up timing: with LG_STARTUP_TIMES=1 in the environment, the steps that get a lane
// ready (lowering, lifting, fusion, emission, NVRTC, module load, weight upload, first steps)
// each print their wall time on stderr, so a slow start can be measured where it happens (the GPU
// machine) without a profiler. Off by default: nothing is printed.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace lg {

/// True when LG_STARTUP_TIMES is set to anything but "" or "0" (read once per process).
bool startup_times_enabled();

/// Times consecutive phases: each mark() closes the phase that began at the previous mark (or at
/// construction) and, when enabled, prints "lg: startup: WHO: PHASE 1.234 s (NOTE)" to stderr.
class StartupClock {
 public:
  explicit StartupClock(std::string who);
  /// Ends the current phase and prints its line (after any mark_later() still holds); returns its
  /// seconds (measured whether or not printing is enabled).
  double mark(std::string_view phase, std::string_view note = {});
  /// Ends the current phase as mark() does but holds its line back until flush(): for phases
  /// that end while a command streams text to the terminal (lg run's first steps).
  double mark_later(std::string_view phase, std::string_view note = {});
  /// Prints the lines mark_later() held back, in order (when enabled).
  void flush();
  /// Seconds of the current phase so far.
  double lap() const;
  /// Seconds since construction.
  double total() const;

 private:
  using clock = std::chrono::steady_clock;
  std::string line(std::string_view phase, double s, std::string_view note) const;
  std::string who_;
  clock::time_point start_, last_;
  std::vector<std::string> held_;  ///< mark_later's lines, for flush()
};

}  // namespace lg
