// The compiled lane's runtime kernels (outside the emitted program; see device_ops.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lg::compiled {

/// dst[i] = value.
void fill_f32(float* dst, size_t n, float value, cudaStream_t s);
/// dst[i] = float(src[i]) for bf16 bits src (exact): a bf16 checkpoint tensor the .lg declares f32.
void widen_bf16(const uint16_t* src, size_t n, float* dst, cudaStream_t s);
/// out[r] = the index of the largest of row r of x[rows, n) (the lowest on ties; NaNs are never
/// chosen unless all are NaN, then 0): greedy decoding's token, as std::max_element on the host.
/// `pdl`: launched with programmatic dependent launch (the kernel waits on the previous launch
/// before it reads x), as the emitted kernels are.
void argmax(const float* x, long n, int* out, cudaStream_t s, int rows = 1, bool pdl = true);

}  // namespace lg::compiled
