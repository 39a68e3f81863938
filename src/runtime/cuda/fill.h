// Deterministic random fills on the device: random-weight checkpoints at real shapes for
// `lg bench` (both GPU lanes) and random inputs of kernel tests and benchmarks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lg::cuda {

/// dst[i] = bf16(uniform in [-amplitude, amplitude)), from a counter hash of (seed, i): any size
/// fills in one pass, and the values depend on nothing else. Throws lg::Error on a launch failure.
void fill_uniform_bf16(__nv_bfloat16* dst, size_t n, uint64_t seed, float amplitude, cudaStream_t stream);

}  // namespace lg::cuda
