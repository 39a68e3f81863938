// Programmatic Dependent Launch (PDL, sm_90; CUDA programming guide, "Programmatic Dependent
// Launch and Synchronization"). The decode kernels are launched with
// cudaLaunchAttributeProgrammaticStreamSerialization, so a kernel's blocks may start while the
// previous kernel in the stream (or captured graph) is still running. Each kernel then splits in
// two:
//   before grid_dependency_wait(): only reads of data no earlier kernel writes (the weights), so
//     a GEMV streams its first weights while the previous kernel drains, or data written two or
//     more launches back (the previous kernel called launch_dependents() only after its own wait,
//     so every kernel before it had completed when this one started: the decode graph's position);
//   after it: everything else. The wait returns once the previous grid has completed and its
//     memory is visible; since that grid passed its own wait first, every earlier kernel has too.
// launch_dependents() lets the next kernel's blocks be scheduled; it is called right after the
// wait, so at most two kernels are in flight and the next one's early blocks only take SM room
// this one no longer needs. Both are no-ops for a kernel launched without the attribute.
#pragma once

#include "kernels/device_helpers.cuh"

namespace lg::qwen::dev {

/// The wait both lanes use (lg_wait_previous_launch, src/kernels/device_helpers.cuh).
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  lg_wait_previous_launch();
#endif
}

/// The early launch both lanes use (lg_launch_dependents, src/kernels/device_helpers.cuh).
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  lg_launch_dependents();
#endif
}

/// Cross-block hand-off inside one launch ("last block done", CUDA samples' threadFenceReduction):
/// the caller has written its part; after the fence, adds `n` to *counter and returns true in the
/// caller that brought it to `total`. That caller resets the counter to 0 for the next launch
/// (no other block touches it again in this launch) and may then read every part with
/// ld.global.cg (__ldcg: L2, never a stale L1 line).
__device__ __forceinline__ bool arrive_last(int* counter, int n, int total) {
  __threadfence();
  const int before = atomicAdd(counter, n);
  if (before + n != total) return false;
  __threadfence();
  *counter = 0;
  return true;
}

}  // namespace lg::qwen::dev
