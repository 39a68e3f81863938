// Launchers of the hand-written Qwen kernels: grid/block choices and the head_dim dispatch. The
// kernels themselves are in kernels/*.cuh, one per op.
#include "lanes/qwen/kernels.h"

#include <string>

#include "lanes/qwen/kernels/argmax.cuh"
#include "lanes/qwen/kernels/attention.cuh"
#include "lanes/qwen/kernels/embed.cuh"
#include "lanes/qwen/kernels/gemv.cuh"
#include "lanes/qwen/kernels/init.cuh"
#include "lanes/qwen/kernels/rmsnorm.cuh"
#include "lanes/qwen/kernels/rope_kv.cuh"
#include "lanes/qwen/kernels/swiglu.cuh"
#include "runtime/cuda/cuda_check.h"

namespace lg::qwen {

namespace {

template <dev::GemvIn IN, dev::GemvOut OUT>
void gemv_as(const GemvArgs& a, cudaStream_t s) {
  const int blocks = (a.N + dev::kGemvRowsPerBlock - 1) / dev::kGemvRowsPerBlock;
  const size_t smem = static_cast<size_t>(a.K) * sizeof(bf16);
  dev::gemv_kernel<IN, OUT><<<blocks, dev::kGemvThreads, smem, s>>>(a.W, a.N, a.K, a.x_f32, a.in_bf16, a.norm_w,
                                                                    a.eps, a.out_f32, a.out_bf16);
  LG_CUDA_CHECK_LAUNCH();
}

template <dev::GemvIn IN>
void gemv_out(GemvOutput out, const GemvArgs& a, cudaStream_t s) {
  switch (out) {
    case GemvOutput::kStore: return gemv_as<IN, dev::GemvOut::kStore>(a, s);
    case GemvOutput::kResidual: return gemv_as<IN, dev::GemvOut::kResidual>(a, s);
    case GemvOutput::kSwiGLU: return gemv_as<IN, dev::GemvOut::kSwiGLU>(a, s);
  }
}

int grid_for(size_t n, int threads) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65536 ? (b == 0 ? 1 : b) : 65536);
}

void check_head_dim(int Dh) {
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)
    throw Error("hand-written attention: head_dim " + std::to_string(Dh) + " is not one of 16, 32, 64, 128");
}

}  // namespace

void launch_gemv(GemvInput in, GemvOutput out, const GemvArgs& a, cudaStream_t s) {
  if (a.N <= 0 || a.N % 2 != 0 || a.K <= 0 || a.K % 8 != 0 || a.K > kGemvMaxK)
    throw Error("hand-written GEMV: unsupported shape N=" + std::to_string(a.N) + " K=" + std::to_string(a.K) +
                " (N even, K a multiple of 8 up to " + std::to_string(kGemvMaxK) + ")");
  if (in == GemvInput::kRmsNorm) return gemv_out<dev::GemvIn::kRmsNorm>(out, a, s);
  return gemv_out<dev::GemvIn::kBf16>(out, a, s);
}

void launch_rmsnorm_rows(const float* x, const float* w, int T, int D, float eps, bf16* h, cudaStream_t s) {
  dev::rmsnorm_rows_kernel<<<T, 256, 0, s>>>(x, w, D, eps, h);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_rope_kv(const float* qkv, const float* bias, const float* q_norm, const float* k_norm,
                    const float* inv_freq, const int* pos0, float eps, int T, int H, int KV, int Dh, int S,
                    float* q_out, bf16* k_cache, bf16* v_cache, cudaStream_t s) {
  if (Dh > 256 || Dh % 2 != 0) throw Error("hand-written RoPE: head_dim " + std::to_string(Dh) + " unsupported");
  dev::RopeKvArgs a{qkv, bias, q_norm, k_norm, inv_freq, pos0, eps, H, KV, Dh, S, q_out, k_cache, v_cache};
  dev::rope_kv_kernel<<<dim3(H + 2 * KV, T), Dh, 0, s>>>(a);
  LG_CUDA_CHECK_LAUNCH();
}

size_t decode_attention_scratch_floats(int H, int Dh) {
  return static_cast<size_t>(H) * dev::kDecodeSplits * (Dh + 2);
}

template <int DH>
static void attn_decode_as(const float* q, const bf16* kc, const bf16* vc, const int* pos0, int H, int KV, int S,
                           float* scratch, bf16* out, cudaStream_t s) {
  const float scale = 1.f / sqrtf(static_cast<float>(DH));
  dev::attn_decode_split_kernel<DH>
      <<<dim3(H, dev::kDecodeSplits), dev::kAttnWarps * 32, 0, s>>>(q, kc, vc, pos0, H, KV, S, scale, scratch);
  LG_CUDA_CHECK_LAUNCH();
  dev::attn_decode_combine_kernel<DH><<<H, DH, 0, s>>>(scratch, out);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_attention_decode(const float* q, const bf16* kc, const bf16* vc, const int* pos0, int H, int KV, int Dh,
                             int S, float* scratch, bf16* out, cudaStream_t s) {
  check_head_dim(Dh);
  switch (Dh) {
    case 16: return attn_decode_as<16>(q, kc, vc, pos0, H, KV, S, scratch, out, s);
    case 32: return attn_decode_as<32>(q, kc, vc, pos0, H, KV, S, scratch, out, s);
    case 64: return attn_decode_as<64>(q, kc, vc, pos0, H, KV, S, scratch, out, s);
    default: return attn_decode_as<128>(q, kc, vc, pos0, H, KV, S, scratch, out, s);
  }
}

template <int DH>
static void attn_prefill_as(const float* q, const bf16* kc, const bf16* vc, const int* pos0, int T, int H, int KV,
                            int S, bf16* out, cudaStream_t s) {
  const float scale = 1.f / sqrtf(static_cast<float>(DH));
  dim3 grid(H, (T + dev::kAttnWarps - 1) / dev::kAttnWarps);
  dev::attn_prefill_kernel<DH><<<grid, dev::kAttnWarps * 32, 0, s>>>(q, kc, vc, pos0, T, H, KV, S, scale, out);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_attention_prefill(const float* q, const bf16* kc, const bf16* vc, const int* pos0, int T, int H, int KV,
                              int Dh, int S, bf16* out, cudaStream_t s) {
  check_head_dim(Dh);
  switch (Dh) {
    case 16: return attn_prefill_as<16>(q, kc, vc, pos0, T, H, KV, S, out, s);
    case 32: return attn_prefill_as<32>(q, kc, vc, pos0, T, H, KV, S, out, s);
    case 64: return attn_prefill_as<64>(q, kc, vc, pos0, T, H, KV, S, out, s);
    default: return attn_prefill_as<128>(q, kc, vc, pos0, T, H, KV, S, out, s);
  }
}

void launch_swiglu(const float* gu, size_t n, bf16* act, cudaStream_t s) {
  dev::swiglu_kernel<<<grid_for(n, 256), 256, 0, s>>>(reinterpret_cast<const float2*>(gu), n, act);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_embed(const bf16* table, const int* tokens, int T, int D, float* x, cudaStream_t s) {
  dev::embed_kernel<<<T, 256, 0, s>>>(table, tokens, D, x);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_argmax(const float* logits, int V, int* out, cudaStream_t s) {
  dev::argmax_kernel<<<1, dev::kArgmaxThreads, 0, s>>>(logits, V, out);
  LG_CUDA_CHECK_LAUNCH();
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

void launch_fill_uniform(bf16* dst, size_t n, uint64_t seed, float amplitude, cudaStream_t s) {
  dev::fill_uniform_kernel<<<grid_for(n, 256), 256, 0, s>>>(dst, n, seed, amplitude);
  LG_CUDA_CHECK_LAUNCH();
}

}  // namespace lg::qwen
