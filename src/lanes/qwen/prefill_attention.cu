// The hand-written lane's instance of the shared tensor-core prefill attention: a policy over the
// lane's buffers (q fp32 [T, H, Dh], caches bf16 [KV, S, Dh], out bf16 [T, H * Dh]) and the launch.
#include "lanes/qwen/prefill_attention.h"

#include <cmath>
#include <string>

#include "kernels/flash_attention.cuh"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"

namespace lg::qwen {

namespace {

template <int DH> struct LanePolicy {
  const float* q;
  const unsigned short* k;  // bf16 bits [KV, S, DH]
  const unsigned short* v;
  unsigned short* out;      // bf16 bits [T, H * DH]
  int pos0, H, S;

  __device__ __forceinline__ uint4 load_q8(int t, int h, int d0) const {
    return lg_fa::load8_f32_as_bf16(q + (static_cast<size_t>(t) * H + h) * DH + d0);
  }
  __device__ __forceinline__ uint4 load_k8(int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(k + (static_cast<size_t>(kvh) * S + j) * DH + d0);
  }
  __device__ __forceinline__ uint4 load_v8(int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(v + (static_cast<size_t>(kvh) * S + j) * DH + d0);
  }
  __device__ __forceinline__ int pos(int t) const { return pos0 + t; }
  __device__ __forceinline__ void store_o2(int t, int h, int d, float o0, float o1) const {
    *reinterpret_cast<unsigned*>(out + (static_cast<size_t>(t) * H + h) * DH + d) = lg_fa::pack_bf16x2(o0, o1);
  }
};

template <int DH>
__global__ void __launch_bounds__(lg_fa::kThreads) attn_prefill_tc_kernel(const float* q, const unsigned short* k,
                                                                          const unsigned short* v, const int* pos0,
                                                                          int T, int H, int group, int S,
                                                                          float scale, unsigned short* out) {
  __shared__ lg_fa::Smem<DH> sm;
  const LanePolicy<DH> p{q, k, v, out, *pos0, H, S};
  int tile, h;
  lg_fa::schedule(static_cast<int>(blockIdx.x), T, H, tile, h);
  lg_fa::attention_block<DH>(p, tile, h, T, group, scale, sm);
}

template <int DH>
void launch_as(const float* q, const __nv_bfloat16* kc, const __nv_bfloat16* vc, const int* pos0, int T, int H,
               int group, int S, __nv_bfloat16* out, cudaStream_t s) {
  const float scale = 1.f / std::sqrt(static_cast<float>(DH));
  attn_prefill_tc_kernel<DH><<<lg_fa::grid_blocks(T, H), lg_fa::kThreads, 0, s>>>(
      q, reinterpret_cast<const unsigned short*>(kc), reinterpret_cast<const unsigned short*>(vc), pos0, T, H, group,
      S, scale, reinterpret_cast<unsigned short*>(out));
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_attention_prefill_tc(const float* q, const __nv_bfloat16* kc, const __nv_bfloat16* vc, const int* pos0,
                                 int T, int H, int KV, int Dh, int S, __nv_bfloat16* out, cudaStream_t s) {
  if (H <= 0 || KV <= 0 || H % KV != 0)
    throw Error("tensor-core prefill attention: num_attention_heads " + std::to_string(H) +
                " is not a positive multiple of num_key_value_heads " + std::to_string(KV));
  if (T < 0) throw Error("tensor-core prefill attention: T = " + std::to_string(T) + " < 0");
  if (T == 0) return;
  const int group = H / KV;
  switch (Dh) {
    case 16: return launch_as<16>(q, kc, vc, pos0, T, H, group, S, out, s);
    case 32: return launch_as<32>(q, kc, vc, pos0, T, H, group, S, out, s);
    case 64: return launch_as<64>(q, kc, vc, pos0, T, H, group, S, out, s);
    case 128: return launch_as<128>(q, kc, vc, pos0, T, H, group, S, out, s);
    default:
      throw Error("tensor-core prefill attention: head_dim " + std::to_string(Dh) + " is not one of 16, 32, 64, 128");
  }
}

}  // namespace lg::qwen
