// Token embedding gather into the fp32 residual stream: x[t] = f32(embed[tokens[t]]). Token ids
// are checked on the host before they reach the device. The first kernel of a decode step: it
// waits for nothing earlier in the graph but still passes the PDL wait (pdl.cuh) before writing x,
// which the previous step's last kernels read.
#pragma once

#include "lanes/qwen/kernels/common.cuh"
#include "lanes/qwen/kernels/pdl.cuh"

namespace lg::qwen::dev {

/// pos_src / pos_dst: the decode step's form, where the token id and the position sit in mapped
/// pinned host memory (written by the host before the graph launch: no copy in the step) and
/// block 0 copies the position to device memory for the step's later kernels; null in prefill.
__global__ void embed_kernel(const bf16* __restrict__ table, const int* __restrict__ tokens, int D,
                             float* __restrict__ x, const int* pos_src, int* pos_dst) {
  grid_dependency_wait();
  launch_dependents();
  int token;
  if (pos_src) {
    // Host memory: a system-scope load, never a cached copy from an earlier step.
    asm volatile("ld.relaxed.sys.global.s32 %0, [%1];" : "=r"(token) : "l"(tokens + blockIdx.x) : "memory");
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      int pos;
      asm volatile("ld.relaxed.sys.global.s32 %0, [%1];" : "=r"(pos) : "l"(pos_src) : "memory");
      *pos_dst = pos;
    }
  } else {
    token = tokens[blockIdx.x];
  }
  // 16-byte loads (D % 8 == 0): a decode step's first kernel, on the critical path.
  const uint4* row = reinterpret_cast<const uint4*>(table + static_cast<size_t>(token) * D);
  float4* xr = reinterpret_cast<float4*>(x + static_cast<size_t>(blockIdx.x) * D);
  for (int c = threadIdx.x; c < D / 8; c += blockDim.x) {
    const uint4 u = row[c];
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
    const float2 e = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.z));
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.w));
    xr[2 * c] = make_float4(a.x, a.y, b.x, b.y);
    xr[2 * c + 1] = make_float4(e.x, e.y, f.x, f.y);
  }
}

}  // namespace lg::qwen::dev
