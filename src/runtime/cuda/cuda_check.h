// LG_CUDA_CHECK: every CUDA runtime call goes through it, so a failure becomes an lg::Error that
// names the source file and line and the call that failed instead of a silent wrong answer.
// Runtime API only (cudart): lanegraph never links the driver API, so binaries start on machines
// with the toolkit but no driver (CI).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "support/error.h"

namespace lg::cuda {

/// Throws lg::Error("CUDA error at FILE:LINE in EXPR: NAME: description") when `err` is not
/// cudaSuccess. Also clears the runtime's sticky last-error slot for non-sticky errors.
inline void check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();
  throw Error(std::string("CUDA error at ") + file + ":" + std::to_string(line) + " in " + expr + ": " +
              cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

}  // namespace lg::cuda

/// Wraps a CUDA runtime call; on failure throws lg::Error naming file:line and the call.
#define LG_CUDA_CHECK(expr) ::lg::cuda::check((expr), #expr, __FILE__, __LINE__)
/// After a kernel launch: reports a bad launch configuration at the launch site.
#define LG_CUDA_CHECK_LAUNCH() ::lg::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
