// Opt-in timing of a lane's steps (LG_STEP_TIMES=1): the wall time of each step() against the GPU
// time of its launches (events around them), so a slow step can be told apart as host overhead
// (the GPU idles between steps: step() synchronises) or kernel time, where there is no profiler.
// Off by default: nothing is recorded or printed. LG_STEP_TRACE=FILE writes every step as a CSV
// line instead (its start, shape and times), so a serving run's steps can be read in order: how
// many were decode graphs or mixed rows steps, and how long the GPU idled between them. Each lane
// opens the file anew: a process that makes several lanes keeps the last one's steps.
#pragma once

#include <chrono>
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "runtime/cuda/device.h"

namespace lg::cuda {

/// Step timing of one lane, printed on stderr when it is destroyed, per step shape (T, B):
/// "lg: step times: WHO: T=1 B=1: 63 steps, wall median 4.190 ms, GPU median 4.170 ms".
class StepTimes {
 public:
  explicit StepTimes(std::string who);
  ~StepTimes();
  StepTimes(const StepTimes&) = delete;
  StepTimes& operator=(const StepTimes&) = delete;
  /// Whether LG_STEP_TIMES is set (to anything but "" or "0") or LG_STEP_TRACE names a file.
  bool on() const { return on_ || trace_ != nullptr; }
  /// Marks the start of a step (host clock) and of its launches on `s` (event).
  void begin(cudaStream_t s);
  /// Marks the end of the step's launches on `s` (event).
  void end_launches(cudaStream_t s);
  /// After the step's synchronise: records its wall and GPU times under (T, B).
  void done(int64_t T, int64_t B);

 private:
  struct Samples {
    std::vector<double> wall_ms, gpu_ms;
  };
  std::string who_;
  bool on_ = false;
  /// LG_STEP_TRACE's file: "start_ms,T,B,wall_ms,gpu_ms" a step, start_ms from the lane's start.
  std::FILE* trace_ = nullptr;
  std::chrono::steady_clock::time_point born_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point t0_;
  Event start_, stop_;
  std::map<std::pair<int64_t, int64_t>, Samples> by_shape_;
};

}  // namespace lg::cuda
