// Where a step's GPU time goes, without a profiler (LG_PROFILE_LAUNCHES=1): an event after each
// launch of an eagerly run step, the time between consecutive events summed per label. Events
// between kernels serialise them (no PDL overlap, no graph), so the total is above the step's time
// as a graph; the shares are what to look at.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/device.h"

namespace lg::cuda {

class LaunchProfile {
 public:
  /// Starts timing on `s` (records the first event).
  explicit LaunchProfile(cudaStream_t s);
  /// The work enqueued on the stream since the previous mark is `label`'s.
  void mark(const std::string& label);
  /// Synchronises and returns one line per label, largest first: total ms, share, count.
  std::string report(const std::string& title) const;

 private:
  cudaStream_t s_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<std::string> labels_;
};

}  // namespace lg::cuda
