// A CudaProgram's kernels compiled to cubins with NVRTC, in parallel translation units (each
// kernel that instantiates the flash-attention template takes seconds at -O3), each through the
// on-disk cache (nvrtc.h). Needs libnvrtc only, never the driver.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "emit/cuda/program.h"

namespace lg::emit::cuda {

/// One translation unit: the prelude and kernels [first, first + count) of the program.
struct CubinChunk {
  size_t first = 0, count = 0;
  std::vector<char> cubin;
  bool cache_hit = false;  ///< the cubin came from the cache
};

/// Compiles every kernel of `prog` for `arch` in up to `threads` translation units (kernels split
/// evenly, in order), one thread each. The units' source text depends on `threads`, so a machine
/// with another core count fills its own cache entries. Throws lg::Error with NVRTC's log when a
/// unit fails to compile.
std::vector<CubinChunk> nvrtc_compile_program(const CudaProgram& prog, const std::string& arch, size_t threads);

}  // namespace lg::emit::cuda
