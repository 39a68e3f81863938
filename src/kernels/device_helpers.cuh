// Device helpers both lanes share: bf16 widening and rounding, warp and block reductions, the
// programmatic-dependent-launch wait, the streaming 16-byte load. The hand-written lane includes
// this file (nvcc, through src/lanes/qwen/kernels/common.cuh and pdl.cuh); the compiled lane's
// emitter pastes it into every program it compiles with NVRTC (src/emit/CMakeLists.txt embeds the
// text after the `#pragma once` line and the blank line that follows it; src/emit/cuda/prelude.cpp).
// Hence, as for flash_attention.cuh: no include directives, nothing from the standard library, no
// CUDA header types beyond the built-in vector types, every name prefixed lg_, and sm_90 (the
// griddepcontrol and ld.global.nc.L1::no_allocate instructions; both lanes build for sm_90 only).
//
// The text below is part of every emitted program.cu: editing it changes the compiled lane's
// kernels (and their NVRTC cache key) as well as the hand-written lane's.
#pragma once

// bf16 widening, warp reductions, loads.
__device__ __forceinline__ float lg_bf16(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float lg_bf16_lo(unsigned v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float lg_bf16_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
// Programmatic dependent launch (sm_90): the runtime may start this grid before the previous
// launch has finished (its launch latency hides behind that launch's tail); nothing is read before
// the previous grid's writes are visible. Without the launch attribute it returns at once.
__device__ __forceinline__ void lg_wait_previous_launch() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the next launch's blocks be scheduled once every block of this one has called it (or
// exited); called right after the wait, so at most two launches are in flight. The next launch
// still waits for this one's completion before it reads anything this one writes.
__device__ __forceinline__ void lg_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// Starts copying [p, p + bytes) from device memory into L2 and returns at once (sm_90
// cp.async.bulk.prefetch: p 16-byte aligned, bytes a multiple of 16). It writes no memory, so a
// kernel may issue it before lg_wait_previous_launch for data no launch writes (weights).
__device__ __forceinline__ void lg_prefetch_l2(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
// A 16-byte load of data read once (decode weights): bypasses L1 so it does not evict what is reused.
__device__ __forceinline__ uint4 lg_ld_stream(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}
__device__ __forceinline__ float lg_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// f32 -> bf16 bits, round to nearest even (NaN stays NaN): the operand of a tensor-core GEMM.
__device__ __forceinline__ unsigned short lg_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)0x7fc0u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
// One step of a greedy argmax: (v, i) replaces the best (bv, bi) when larger, or equal at a lower
// index (torch.argmax's and std::max_element's tie rule). NaN never wins: a row of NaN leaves bi at
// its start (INT_MAX in every caller, reported as 0). Both lanes' argmaxes take it.
__device__ __forceinline__ void lg_argmax_take(float& bv, int& bi, float v, int i) {
  if (v > bv || (v == bv && i < bi)) {
    bv = v;
    bi = i;
  }
}
// The largest of the 32 lanes' v, on every lane (a converged warp): one redux.sync on sm_80 and
// later, five shuffles before.
__device__ __forceinline__ unsigned lg_warp_max_u32(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_max_sync(0xffffffffu, v);
#else
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}
__device__ __forceinline__ float lg_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum / max of every thread's v (blockDim.x a multiple of 32); every thread gets the
// block's value. `red`: 32 floats of shared memory, free for the next call when it returns.
__device__ __forceinline__ float lg_block_sum(float v, float* red) {
  v = lg_warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v += red[w];
  __syncthreads();
  return v;
}
__device__ __forceinline__ float lg_block_max(float v, float* red) {
  v = lg_warp_max(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v = fmaxf(v, red[w]);
  __syncthreads();
  return v;
}
