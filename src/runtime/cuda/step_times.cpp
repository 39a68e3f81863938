#include "runtime/cuda/step_times.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lg::cuda {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

StepTimes::StepTimes(std::string who) : who_(std::move(who)) {
  const char* e = std::getenv("LG_STEP_TIMES");
  on_ = e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  const char* path = std::getenv("LG_STEP_TRACE");
  if (path != nullptr && *path != '\0') {
    trace_ = std::fopen(path, "w");
    if (trace_ == nullptr) std::fprintf(stderr, "lg: LG_STEP_TRACE: cannot write %s; no step trace\n", path);
    else std::fprintf(trace_, "start_ms,T,B,wall_ms,gpu_ms\n");
  }
}

StepTimes::~StepTimes() {
  if (trace_ != nullptr) std::fclose(trace_);
  for (const auto& [shape, s] : by_shape_)
    std::fprintf(stderr, "lg: step times: %s: T=%lld B=%lld: %zu steps, wall median %.3f ms, GPU median %.3f ms\n",
                 who_.c_str(), static_cast<long long>(shape.first), static_cast<long long>(shape.second),
                 s.wall_ms.size(), median(s.wall_ms), median(s.gpu_ms));
}

void StepTimes::begin(cudaStream_t s) {
  if (!on()) return;
  t0_ = std::chrono::steady_clock::now();
  start_.record(s);
}

void StepTimes::end_launches(cudaStream_t s) {
  if (on()) stop_.record(s);
}

void StepTimes::done(int64_t T, int64_t B) {
  if (!on()) return;
  using ms = std::chrono::duration<double, std::milli>;
  const double wall = ms(std::chrono::steady_clock::now() - t0_).count();
  const double gpu = stop_.elapsed_ms_since(start_);
  if (trace_ != nullptr)
    std::fprintf(trace_, "%.3f,%lld,%lld,%.3f,%.3f\n", ms(t0_ - born_).count(), static_cast<long long>(T),
                 static_cast<long long>(B), wall, gpu);
  if (!on_) return;
  Samples& x = by_shape_[{T, B}];
  x.wall_ms.push_back(wall);
  x.gpu_ms.push_back(gpu);
}

}  // namespace lg::cuda
