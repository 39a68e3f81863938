// The hand-written lane's instance of the shared tensor-core prefill attention: a policy over the
// lane's buffers (q fp32 [T, H, Dh], one sequence's K/V in the paged pools bf16 [KV, rows, Dh],
// out bf16 [T, H * Dh]) and the launch.
#include "lanes/qwen/prefill_attention.h"

#include <cmath>
#include <cstddef>
#include <string>

#include "kernels/flash_attention.cuh"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"

namespace lg::qwen {

namespace {

template <int DH> struct PagedPolicy {
  const float* q;
  const unsigned short* k;  // bf16 bits [KV, rows, DH]
  const unsigned short* v;
  unsigned short* out;      // bf16 bits [T, H * DH]
  const int* pos_of;        // [T]
  const int* bt;            // the sequence's block table
  int H, rows, shift;

  // The template asks for key rows j <= max pos(t) only, all inside the block table.
  __device__ __forceinline__ size_t row_of(int kvh, int j) const {
    const int row = (__ldg(bt + (j >> shift)) << shift) | (j & ((1 << shift) - 1));
    return (static_cast<size_t>(kvh) * static_cast<size_t>(rows) + static_cast<size_t>(row)) * DH;
  }
  __device__ __forceinline__ uint4 load_q8(int t, int h, int d0) const {
    return lg_fa::load8_f32_as_bf16(q + (static_cast<size_t>(t) * H + h) * DH + d0);
  }
  __device__ __forceinline__ uint4 load_k8(int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(k + row_of(kvh, j) + d0);
  }
  __device__ __forceinline__ uint4 load_v8(int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(v + row_of(kvh, j) + d0);
  }
  __device__ __forceinline__ int pos(int t) const { return pos_of[t]; }
  __device__ __forceinline__ void store_o2(int t, int h, int d, float o0, float o1) const {
    *reinterpret_cast<unsigned*>(out + (static_cast<size_t>(t) * H + h) * DH + d) = lg_fa::pack_bf16x2(o0, o1);
  }
};

template <int DH>
__global__ void __launch_bounds__(lg_fa::kThreads) attn_prefill_tc_kernel(const float* q, const unsigned short* k,
                                                                          const unsigned short* v, const int* bt,
                                                                          const int* pos, int T, int H, int group,
                                                                          int rows, int shift, float scale,
                                                                          unsigned short* out) {
  __shared__ lg_fa::Smem<DH> sm;
  const PagedPolicy<DH> p{q, k, v, out, pos, bt, H, rows, shift};
  int tile, h;
  lg_fa::schedule(static_cast<int>(blockIdx.x), T, H, tile, h);
  lg_fa::attention_block<DH>(p, tile, h, T, group, scale, sm);
}

template <int DH>
void launch_as(const float* q, const KvPages& c, const int* bt, const int* pos, int T, int H, int group, int shift,
               __nv_bfloat16* out, cudaStream_t s) {
  const float scale = 1.f / std::sqrt(static_cast<float>(DH));
  attn_prefill_tc_kernel<DH><<<lg_fa::grid_blocks(T, H), lg_fa::kThreads, 0, s>>>(
      q, reinterpret_cast<const unsigned short*>(c.k), reinterpret_cast<const unsigned short*>(c.v), bt, pos, T, H,
      group, c.rows, shift, scale, reinterpret_cast<unsigned short*>(out));
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_attention_prefill_tc(const float* q, const KvPages& c, const int* bt, const int* pos, int T, int H, int KV,
                                 int Dh, __nv_bfloat16* out, cudaStream_t s) {
  if (H <= 0 || KV <= 0 || H % KV != 0)
    throw Error("tensor-core prefill attention: num_attention_heads " + std::to_string(H) +
                " is not a positive multiple of num_key_value_heads " + std::to_string(KV));
  if (T < 0) throw Error("tensor-core prefill attention: T = " + std::to_string(T) + " < 0");
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)
    throw Error("tensor-core prefill attention: head_dim " + std::to_string(Dh) + " is not one of 16, 32, 64, 128");
  if (c.block_size <= 0 || (c.block_size & (c.block_size - 1)) != 0 || c.rows <= 0 || c.rows % c.block_size != 0)
    throw Error("tensor-core prefill attention: KV block size " + std::to_string(c.block_size) +
                " is not a power of two dividing the pool's " + std::to_string(c.rows) + " rows");
  if (T == 0) return;
  if (!q || !c.k || !c.v || !bt || !pos || !out) throw Error("tensor-core prefill attention: a missing buffer");
  int shift = 0;
  while ((1 << shift) < c.block_size) ++shift;
  const int group = H / KV;
  switch (Dh) {
    case 16: return launch_as<16>(q, c, bt, pos, T, H, group, shift, out, s);
    case 32: return launch_as<32>(q, c, bt, pos, T, H, group, shift, out, s);
    case 64: return launch_as<64>(q, c, bt, pos, T, H, group, shift, out, s);
    default: return launch_as<128>(q, c, bt, pos, T, H, group, shift, out, s);
  }
}

}  // namespace lg::qwen
