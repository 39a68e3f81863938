// Times causal prefill attention alone at the Qwen3-8B (H 32, KV 8) and 0.6B (H 16, KV 8) shapes,
// head_dim 128, pos0 0: the tensor-core template (launch_attention_prefill_tc) against the lane's
// CUDA-core kernel (launch_attention_prefill), CUDA events, median of repeated launches after a
// warm-up, random inputs. FLOPs counted as causal: 4 * T^2 / 2 * Dh * H. Also prints the
// norm-wise difference of the two outputs (both bf16; the old one keeps q and P in fp32).
// Usage: flash-attention-bench [reps]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/prefill_attention.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"
#include "support/dtype.h"

namespace {

using lg::qwen::bf16;

template <class F>
double median_ms(F&& launch, int reps) {
  cudaEvent_t a, b;
  LG_CUDA_CHECK(cudaEventCreate(&a));
  LG_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) launch();  // warm-up: module load, caches
  LG_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(static_cast<size_t>(reps));
  for (auto& m : ms) {
    LG_CUDA_CHECK(cudaEventRecord(a));
    launch();
    LG_CUDA_CHECK(cudaEventRecord(b));
    LG_CUDA_CHECK(cudaEventSynchronize(b));
    LG_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
  }
  std::sort(ms.begin(), ms.end());
  LG_CUDA_CHECK(cudaEventDestroy(a));
  LG_CUDA_CHECK(cudaEventDestroy(b));
  return ms[ms.size() / 2];
}

std::vector<float> download_bf16(const lg::cuda::DeviceBuffer& d, size_t n) {
  std::vector<uint16_t> raw(n);
  d.download(raw.data(), n * 2);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = lg::bf16_to_f32(raw[i]);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  struct Shape {
    const char* name;
    int H, KV;
  };
  const Shape shapes[] = {{"qwen3-8b", 32, 8}, {"qwen3-0.6b", 16, 8}};
  const int Dh = 128;
  std::mt19937_64 rng(20261129);
  std::printf("%-11s %5s %12s %12s %12s %12s %8s %10s\n", "shape", "T", "old ms", "old TFLOP/s", "tc ms",
              "tc TFLOP/s", "speedup", "rel diff");
  for (const Shape& sh : shapes)
    for (int T : {512, 2048}) {
      const int S = T;
      const size_t nq = static_cast<size_t>(T) * sh.H * Dh, nkv = static_cast<size_t>(sh.KV) * S * Dh;
      std::vector<float> q(nq);
      std::uniform_real_distribution<float> u(-2.f, 2.f);
      for (auto& x : q) x = u(rng);
      lg::cuda::DeviceBuffer dq(nq * 4), dk(nkv * 2), dv(nkv * 2), dpos(sizeof(int)), o_old(nq * 2), o_tc(nq * 2);
      dq.upload(q.data(), nq * 4);
      const int pos0 = 0;
      dpos.upload(&pos0, sizeof pos0);
      lg::cuda::fill_uniform_bf16(dk.as<bf16>(), nkv, 1, 1.f, nullptr);
      lg::cuda::fill_uniform_bf16(dv.as<bf16>(), nkv, 2, 1.f, nullptr);
      LG_CUDA_CHECK(cudaDeviceSynchronize());
      auto old_launch = [&] {
        lg::qwen::launch_attention_prefill(dq.as<float>(), dk.as<bf16>(), dv.as<bf16>(), dpos.as<int>(), T, sh.H,
                                           sh.KV, Dh, S, o_old.as<bf16>(), nullptr);
      };
      auto tc_launch = [&] {
        lg::qwen::launch_attention_prefill_tc(dq.as<float>(), dk.as<bf16>(), dv.as<bf16>(), dpos.as<int>(), T,
                                              sh.H, sh.KV, Dh, S, o_tc.as<bf16>(), nullptr);
      };
      const double old_ms = median_ms(old_launch, std::max(3, reps / 4));
      const double tc_ms = median_ms(tc_launch, reps);
      const auto a = download_bf16(o_old, nq), b = download_bf16(o_tc, nq);
      double num = 0, den = 0;
      for (size_t i = 0; i < nq; ++i) {
        num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        den += static_cast<double>(a[i]) * a[i];
      }
      const double flops = 4.0 * T * static_cast<double>(T) / 2 * Dh * sh.H;
      std::printf("%-11s %5d %12.3f %12.1f %12.3f %12.1f %8.1f %10.2e\n", sh.name, T, old_ms, flops / old_ms / 1e9,
                  tc_ms, flops / tc_ms / 1e9, old_ms / tc_ms, std::sqrt(num / den));
    }
  return 0;
}
