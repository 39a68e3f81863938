// The device prelude of every emitted program: the flash-attention template, the compiled
// program's attention policies and the device helpers every kernel uses.
#include "emit/cuda/render.h"
#include "emit/cuda/templates.h"

namespace lg::emit::cuda {

std::string device_prelude() {
  return "// lanegraph compiled program: device helpers shared by every kernel, after the flash-attention\n"
         "// template (src/kernels/flash_attention.cuh) that attention stages instantiate at T > 1.\n" +
         std::string(kFlashAttentionTemplate) + R"(
// The compiled program's policies for lg_fa::attention_block.
// When k and v are layer slices of f32 caches laid out [kv head][position][dim] (what `kcache[l]`
// reads): a pack kernel first rounds the rows the step attends to into a bf16 copy of the same
// layout, so the tiles are 16-byte loads of 8 bf16 (half the bytes of the f32 rows, read by every
// query tile); q comes packed as bf16 [T, H * DH] by a pack kernel (its RoPE and norms computed
// once per element there, at full occupancy, not inside this 2-blocks-per-SM kernel).
template <int DH, class P, class O> struct lg_attn_policy_rows {
  const P& p; const O& o;
  const unsigned short* q; long q_row;
  const unsigned short* k; const unsigned short* v; long head_stride, row_stride;
  __device__ __forceinline__ uint4 row8(const unsigned short* base, int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(base + kvh * head_stride + j * row_stride + d0);
  }
  __device__ uint4 load_q8(int t, int h, int d0) const {
    return *reinterpret_cast<const uint4*>(q + t * q_row + h * DH + d0);
  }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return row8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return row8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
// Otherwise: q, k, v and the query positions are the attention stage's own lambdas (views, RoPE,
// norms inline), rounded to bf16 on the way in.
template <class Q, class K, class V, class P, class O> struct lg_attn_policy {
  const Q& q; const K& k; const V& v; const P& p; const O& o;
  template <class F> __device__ __forceinline__ uint4 pack8(const F& f, int a, int b, int d0) const {
    uint4 r;
    r.x = lg_fa::pack_bf16x2(f(a, b, d0), f(a, b, d0 + 1));
    r.y = lg_fa::pack_bf16x2(f(a, b, d0 + 2), f(a, b, d0 + 3));
    r.z = lg_fa::pack_bf16x2(f(a, b, d0 + 4), f(a, b, d0 + 5));
    r.w = lg_fa::pack_bf16x2(f(a, b, d0 + 6), f(a, b, d0 + 7));
    return r;
  }
  __device__ uint4 load_q8(int t, int h, int d0) const { return pack8(q, t, h, d0); }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return pack8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return pack8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
// bf16 widening, warp reductions, loads.
__device__ __forceinline__ float lg_bf16(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float lg_bf16_lo(unsigned v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float lg_bf16_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
// Programmatic dependent launch (sm_90): the runtime may start this grid before the previous
// launch has finished (its launch latency hides behind that launch's tail); nothing is read before
// the previous grid's writes are visible. Without the launch attribute it returns at once.
__device__ __forceinline__ void lg_wait_previous_launch() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
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
)";
}

}  // namespace lg::emit::cuda
