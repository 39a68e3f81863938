// What every launcher of the hand-written lane's kernels uses: the lab knobs (bench/RESULTS.md
// A/Bs) and the Programmatic Dependent Launch of kernels/pdl.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>

#include "runtime/cuda/cuda_check.h"

namespace lg::qwen {

/// A kernel-lab knob (bench/qwen_lane.md): the integer in environment variable `name`, else
/// `fallback`. Callers keep it in a static (read once); only tuning defaults and the PDL
/// attribute go through it, never what is computed.
inline int lab_knob(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoi(e) : fallback;
}

/// Launches `kernel`, with Programmatic Dependent Launch allowed (kernels/pdl.cuh) when `pdl`
/// (and knob LG_QWEN_PDL, default 1): only for kernels that call grid_dependency_wait() before
/// touching anything an earlier kernel writes. Captured into a graph, the attribute becomes a
/// programmatic edge (CUDA 12.3+, sm_90).
template <class... Params, class... Args>
void launch_maybe_pdl(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                      Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  static const bool knob = lab_knob("LG_QWEN_PDL", 1) != 0;
  cfg.numAttrs = pdl && knob ? 1 : 0;
  LG_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

/// launch_maybe_pdl with PDL allowed.
template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args... args) {
  launch_maybe_pdl(true, kernel, grid, block, smem, s, args...);
}

}  // namespace lg::qwen
