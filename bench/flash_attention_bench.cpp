// Times causal prefill attention alone at the Qwen3-8B (H 32, KV 8) and 0.6B (H 16, KV 8) shapes,
// head_dim 128, one sequence from position 0 in a paged pool (blocks of 16 in shuffled order): the
// tensor-core template (launch_attention_prefill_tc) against the lane's CUDA-core ragged kernel
// (launch_attention_ragged, what a batch of several sequences runs), CUDA events, median of
// repeated launches after a warm-up, random inputs. FLOPs counted as causal: 4 * T^2 / 2 * Dh * H.
// Also prints the norm-wise difference of the two outputs (both bf16; the ragged one keeps q and
// P in fp32).
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
  std::printf("%-11s %5s %12s %12s %12s %12s %8s %10s\n", "shape", "T", "ragged ms", "ragged TF/s", "tc ms",
              "tc TFLOP/s", "speedup", "rel diff");
  for (const Shape& sh : shapes)
    for (int T : {512, 2048}) {
      const int S = T;
      const size_t nq = static_cast<size_t>(T) * sh.H * Dh, nkv = static_cast<size_t>(sh.KV) * S * Dh;
      std::vector<float> q(nq);
      std::uniform_real_distribution<float> u(-2.f, 2.f);
      for (auto& x : q) x = u(rng);
      const int bs = 16;
      std::vector<int> pos(static_cast<size_t>(T)), seq(static_cast<size_t>(T), 0), table(static_cast<size_t>(S / bs));
      for (int t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = t;
      for (size_t j = 0; j < table.size(); ++j) table[j] = static_cast<int>(j);
      std::shuffle(table.begin(), table.end(), rng);
      lg::cuda::DeviceBuffer dq(nq * 4), dk(nkv * 2), dv(nkv * 2), dpos(pos.size() * 4), dseq(seq.size() * 4),
          dtable(table.size() * 4), o_old(nq * 2), o_tc(nq * 2);
      dq.upload(q.data(), nq * 4);
      dpos.upload(pos.data(), pos.size() * 4);
      dseq.upload(seq.data(), seq.size() * 4);
      dtable.upload(table.data(), table.size() * 4);
      lg::cuda::fill_uniform_bf16(dk.as<bf16>(), nkv, 1, 1.f, nullptr);
      lg::cuda::fill_uniform_bf16(dv.as<bf16>(), nkv, 2, 1.f, nullptr);
      LG_CUDA_CHECK(cudaDeviceSynchronize());
      lg::qwen::KvPages pages;
      pages.k = dk.as<bf16>();
      pages.v = dv.as<bf16>();
      pages.rows = S;
      pages.block_size = bs;
      auto old_launch = [&] {
        lg::qwen::launch_attention_ragged(dq.as<float>(), pages, dtable.as<int>(), static_cast<int>(table.size()),
                                          dseq.as<int>(), dpos.as<int>(), T, sh.H, sh.KV, Dh, o_old.as<bf16>(), nullptr);
      };
      auto tc_launch = [&] {
        lg::qwen::launch_attention_prefill_tc(dq.as<float>(), pages, dtable.as<int>(), dpos.as<int>(), T, sh.H, sh.KV,
                                              Dh, o_tc.as<bf16>(), nullptr);
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
