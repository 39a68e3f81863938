// Launchers of the hand-written Qwen kernels but the attention's (attention_launch.cu,
// attention_batch_launch.cu) and the row GEMV's (gemv_rows.cu): grid/block choices and the dispatch.
// The kernels themselves are in kernels/*.cuh, one per op.
#include "lanes/qwen/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "kernels/launch_policy.h"
#include "lanes/qwen/launch_pdl.h"
#include "lanes/qwen/kernels/argmax.cuh"
#include "lanes/qwen/kernels/embed.cuh"
#include "lanes/qwen/kernels/gemv.cuh"
#include "lanes/qwen/kernels/init.cuh"
#include "lanes/qwen/kernels/rmsnorm.cuh"
#include "lanes/qwen/kernels/rope_kv.cuh"
#include "lanes/qwen/kernels/swiglu.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm_lt.h"

namespace lg::qwen {

namespace {

template <GemvInput IN, GemvOutput OUT>
void gemv_as(const GemvArgs& a, cudaStream_t s) {
  static const int default_bps = lab_knob("LG_QWEN_GEMV_BPS", lg::kernels::kGemvBlocksPerSm);
  const int bps = a.blocks_per_sm > 0 ? a.blocks_per_sm : default_bps;
  const int needed = (a.N / 2 + dev::kGemvWarps - 1) / dev::kGemvWarps;
  const int blocks = std::min({needed, cuda::sm_count() * bps, kGemvMaxBlocks});
  const size_t smem = dev::gemv_smem_bytes(IN, a.K);
  launch_pdl(dev::gemv_kernel<IN, OUT>, dim3(blocks), dim3(dev::kGemvThreads), smem, s, a);
}

template <GemvInput IN>
void gemv_out(GemvOutput out, const GemvArgs& a, cudaStream_t s) {
  switch (out) {
    case GemvOutput::kStore: return gemv_as<IN, GemvOutput::kStore>(a, s);
    case GemvOutput::kResidual: return gemv_as<IN, GemvOutput::kResidual>(a, s);
    case GemvOutput::kSwiGLU: return gemv_as<IN, GemvOutput::kSwiGLU>(a, s);
    case GemvOutput::kStoreArgmax: return gemv_as<IN, GemvOutput::kStoreArgmax>(a, s);
  }
}

int grid_for(size_t n, int threads) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65536 ? (b == 0 ? 1 : b) : 65536);
}

}  // namespace

void launch_gemv(GemvInput in, GemvOutput out, const GemvArgs& a, cudaStream_t s) {
  if (a.N <= 0 || a.N % 2 != 0 || a.K <= 0 || a.K % 8 != 0 || a.K > kGemvMaxK)
    throw Error("hand-written GEMV: unsupported shape N=" + std::to_string(a.N) + " K=" + std::to_string(a.K) +
                " (N even, K a multiple of 8 up to " + std::to_string(kGemvMaxK) + ")");
  if (out == GemvOutput::kStoreArgmax && !a.sync)
    throw Error("hand-written GEMV: the argmax epilogue needs the sync area");
  if (out == GemvOutput::kStoreArgmax && !a.argmax_out) throw Error("hand-written GEMV: argmax without argmax_out");
  if (in == GemvInput::kRmsNorm) return gemv_out<GemvInput::kRmsNorm>(out, a, s);
  return gemv_out<GemvInput::kBf16>(out, a, s);
}

namespace {

/// rmsnorm_rows_kernel over n rows (of x, or x[rows[b]]): the register-held form with the fewest
/// float4 a thread that covers D, where D and the pointers allow it, else the scalar loop. x is
/// written only with nparts > 0 (the split-K partials' sum).
void launch_rmsnorm(float* x, const float* w, const int* rows, int n, int D, float eps, bf16* h, cudaStream_t s,
                    bool pdl, const float* parts = nullptr, int nparts = 0) {
  constexpr int kThreads = 256;
  auto aligned = [](const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
  const bool vec = D % 4 == 0 && aligned(x, 16) && aligned(w, 16) && aligned(h, 8) && aligned(parts, 16);
  const int need = vec ? (D / 4 + kThreads - 1) / kThreads : 0;
  auto go = [&](auto kernel) {
    if (pdl) return launch_pdl(kernel, dim3(n), dim3(kThreads), 0, s, x, w, D, eps, rows, h, parts, nparts);
    kernel<<<n, kThreads, 0, s>>>(x, w, D, eps, rows, h, parts, nparts);
    LG_CUDA_CHECK_LAUNCH();
  };
  // The add's form holds every slice in registers: only the split-K launches pay for them.
  auto pick = [&](auto add) {
    constexpr bool A = decltype(add)::value;
    if (!vec || need > 8) return go(dev::rmsnorm_rows_kernel<0, A>);
    if (need == 1) return go(dev::rmsnorm_rows_kernel<1, A>);
    if (need == 2) return go(dev::rmsnorm_rows_kernel<2, A>);
    if (need <= 4) return go(dev::rmsnorm_rows_kernel<4, A>);
    return go(dev::rmsnorm_rows_kernel<8, A>);
  };
  if (nparts > 0) return pick(std::true_type{});
  return pick(std::false_type{});
}

}  // namespace

void launch_rmsnorm_rows(const float* x, const float* w, int T, int D, float eps, bf16* h, cudaStream_t s, bool pdl) {
  if (T <= 0) return;
  launch_rmsnorm(const_cast<float*>(x), w, nullptr, T, D, eps, h, s, pdl);  // no parts: x is only read
}

void launch_rmsnorm_rows_add(float* x, const float* parts, int nparts, const float* w, int T, int D, float eps, bf16* h,
                             cudaStream_t s) {
  if (T <= 0) return;
  static_assert(kMaxDecodeSlices <= dev::kRmsNormMaxParts && kGemvRowsMaxSplits <= dev::kRmsNormMaxParts);
  if (nparts < 1 || nparts > dev::kRmsNormMaxParts || !parts)
    throw Error("hand-written RMSNorm: the split-K add sums 1 to " + std::to_string(dev::kRmsNormMaxParts) +
                " slices, not " + std::to_string(nparts));
  launch_rmsnorm(x, w, nullptr, T, D, eps, h, s, true, parts, nparts);
}

int decode_gemm_slices(int K, int Bp, bool down) {
  static const bool on = lab_knob("LG_QWEN_SPLITK", 1) != 0;
  if (!on || Bp > 128) return 1;  // measured up to 128 rows
  int S = Bp <= 64 ? (down ? 3 : kMaxDecodeSlices) : 2;
  while (S > 1 && !cuda::split_k_fits(K, S)) --S;
  return S;
}

void launch_rmsnorm_gather(const float* x, const int* rows, const float* w, int B, int D, float eps, bf16* h,
                           cudaStream_t s) {
  if (!rows) throw Error("hand-written RMSNorm: gather without its rows");
  if (B <= 0) return;
  launch_rmsnorm(const_cast<float*>(x), w, rows, B, D, eps, h, s, false);  // no parts: x is only read
}

void launch_rope_kv(const float* qkv, const float* bias, const float* q_norm, const float* k_norm,
                    const float* inv_freq, const int* pos, const int* slot, float eps, int T, int H, int KV, int Dh,
                    const KvPages& cache, float* q_out, cudaStream_t s) {
  if (Dh > 256 || Dh % 2 != 0) throw Error("hand-written RoPE: head_dim " + std::to_string(Dh) + " unsupported");
  if (!pos || !slot || !cache.k || !cache.v) throw Error("hand-written RoPE: missing positions, slots or KV pool");
  if (T <= 0) return;
  dev::RopeKvArgs a{qkv, bias, q_norm, k_norm, inv_freq, pos, slot, eps, H, KV, Dh, cache.rows, q_out, cache.k, cache.v};
  // The warp form where head_dim is 64, 128 or 256 (LG_QWEN_ROPE_WARP=0: the block form always).
  static const bool warp_form = lab_knob("LG_QWEN_ROPE_WARP", 1) != 0;
  const int64_t items = static_cast<int64_t>(T) * (H + 2 * KV);
  const dim3 blocks(static_cast<unsigned>((items + 3) / 4));
  if (warp_form && Dh == 64) dev::rope_kv_warp_kernel<2><<<blocks, 128, 0, s>>>(a, T);
  else if (warp_form && Dh == 128) dev::rope_kv_warp_kernel<4><<<blocks, 128, 0, s>>>(a, T);
  else if (warp_form && Dh == 256) dev::rope_kv_warp_kernel<8><<<blocks, 128, 0, s>>>(a, T);
  else dev::rope_kv_kernel<<<dim3(H + 2 * KV, T), Dh, 0, s>>>(a);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_argmax_rows(const float* logits, int B, int V, int* out, cudaStream_t s) {
  if (B < 0 || V <= 0) throw Error("hand-written argmax: B=" + std::to_string(B) + " V=" + std::to_string(V));
  if (B == 0) return;
  launch_pdl(dev::argmax_rows_kernel, dim3(B), dim3(dev::kArgmaxThreads), 0, s, logits, V, out);
}

bool gate_up_in_bf16() {
  static const bool on = lab_knob("LG_QWEN_GU_BF16", 1) != 0;
  return on;
}

void launch_swiglu_bf16(const bf16* gu, size_t n, bf16* act, cudaStream_t s) {
  if (n == 0) return;
  if (reinterpret_cast<uintptr_t>(gu) % 16 != 0 || reinterpret_cast<uintptr_t>(act) % 8 != 0)
    throw Error("hand-written SwiGLU: the bf16 gate/up product must be 16-byte and the output 8-byte aligned");
  const size_t items = n / 4 + n % 4;
  launch_pdl(dev::swiglu_bf16_kernel, dim3(grid_for(items, 256)), dim3(256), 0, s, gu, n, act);
}

void launch_swiglu(const float* gu, size_t n, bf16* act, cudaStream_t s) {
  // Four pairs a thread where n and the pointers allow (LG_QWEN_SWIGLU_VEC=0: a pair a thread).
  static const bool vec = lab_knob("LG_QWEN_SWIGLU_VEC", 1) != 0;
  if (vec && n % 4 == 0 && reinterpret_cast<uintptr_t>(gu) % 16 == 0 && reinterpret_cast<uintptr_t>(act) % 8 == 0)
    return launch_pdl(dev::swiglu4_kernel, dim3(grid_for(n / 4, 256)), dim3(256), 0, s,
                      reinterpret_cast<const float4*>(gu), n / 4, reinterpret_cast<uint2*>(act));
  launch_pdl(dev::swiglu_kernel, dim3(grid_for(n, 256)), dim3(256), 0, s, reinterpret_cast<const float2*>(gu), n, act);
}

void launch_embed(const bf16* table, const int* tokens, int T, int D, float* x, cudaStream_t s) {
  if (D % 8 != 0) throw Error("hand-written embedding: hidden size " + std::to_string(D) + " is not a multiple of 8");
  launch_pdl(dev::embed_kernel, dim3(T), dim3(256), 0, s, table, tokens, D, x, static_cast<const int*>(nullptr),
             static_cast<int*>(nullptr));
}

void launch_embed_decode(const bf16* table, const int* token_mapped, const int* pos_mapped, int* pos_dev, int D,
                         float* x, cudaStream_t s) {
  if (D % 8 != 0) throw Error("hand-written embedding: hidden size " + std::to_string(D) + " is not a multiple of 8");
  if (!token_mapped || !pos_mapped || !pos_dev) throw Error("hand-written embedding: decode form with a null pointer");
  launch_pdl(dev::embed_kernel, dim3(1), dim3(256), 0, s, table, token_mapped, D, x, pos_mapped, pos_dev);
}

void launch_f32_to_bf16(const float* src, size_t n, bf16* dst, cudaStream_t s) {
  dev::f32_to_bf16_kernel<<<grid_for(n, 256), 256, 0, s>>>(src, n, dst);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_interleave_rows(const bf16* gate, const bf16* up, size_t rows, size_t K, bf16* dst, cudaStream_t s) {
  if (K % 8 != 0) throw Error("interleave_rows: K=" + std::to_string(K) + " is not a multiple of 8");
  dev::interleave_rows_kernel<<<grid_for(rows * K / 8, 256), 256, 0, s>>>(
      reinterpret_cast<const uint4*>(gate), reinterpret_cast<const uint4*>(up), rows, K / 8,
      reinterpret_cast<uint4*>(dst));
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::qwen
