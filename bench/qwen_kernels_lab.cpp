// qwen-kernels-lab: the hand-written lane's decode kernels timed alone (bench/qwen_lane.md, "kernel
// lab"): the decode GEMV at the real Qwen3 shapes for 3 and 4 blocks per SM, the decode attention,
// and the QKV GEMV + RoPE attention step, each launched back to back with PDL as the decode graph
// does (the attention over a paged pool of 16-position blocks in shuffled order, as the lane's).
// Weights rotate through a 3 GB pool of random bf16 so that no launch reads from L2 what the
// previous one left there. Prints microseconds per launch; checks nothing (the kernels' tests are
// tests/lanes_qwen/kernels_test.cpp). Run on the GPU machine: `qwen-kernels-lab`.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/qwen_shape.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"
#include "support/dtype.h"

using namespace lg;
using namespace lg::qwen;

namespace {

std::vector<float> host_uniform(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<uint16_t> bf16_bits(const std::vector<float>& f) {
  std::vector<uint16_t> out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = f32_to_bf16(f[i]);
  return out;
}

template <class T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

/// A block table over all `S / bs` blocks of a pool, in shuffled order (the lane's tables come
/// from a free list and are scattered).
std::vector<int> shuffled_table(std::mt19937_64& rng, int S, int bs) {
  std::vector<int> t(static_cast<size_t>(S / bs));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int>(i);
  std::shuffle(t.begin(), t.end(), rng);
  return t;
}

KvPages pages_of(const cuda::DeviceBuffer& k, const cuda::DeviceBuffer& v, int S, int bs) {
  KvPages p;
  p.k = k.as<bf16>();
  p.v = v.as<bf16>();
  p.rows = S;
  p.block_size = bs;
  return p;
}

}  // namespace

int main() {
  if (!cuda::cuda_device_available()) {
    std::cerr << "qwen-kernels-lab: no CUDA device\n";
    return 1;
  }
  std::mt19937_64 rng(1);

  cuda::Stream s;
  const size_t pool_elems = size_t(3) << 29;  // 1.5 G bf16 = 3 GB
  cuda::DeviceBuffer pool(pool_elems * sizeof(bf16));
  cuda::fill_uniform_bf16(pool.as<bf16>(), pool_elems, 7, 0.05f, s.get());
  const int kMaxK = 12288, kMaxN = 151936;
  auto x = to_device(host_uniform(rng, kMaxK, -2, 2)), nw = to_device(host_uniform(rng, kMaxK, 0.5f, 1.5f));
  auto in = to_device(bf16_bits(host_uniform(rng, kMaxK, -1, 1)));
  auto out_f = to_device(std::vector<float>(kMaxN, 0.f));
  auto out_b = to_device(std::vector<uint16_t>(kMaxN, 0));
  auto sync = to_device(std::vector<int>(kGemvSyncInts, 0));
  auto idx = to_device(std::vector<int>{0});
  cuda::Event e0, e1;
  struct Shape {
    const char* name;
    int N, K;
    GemvInput in;
    GemvOutput out;
  };
  const Shape shapes[] = {
      {"8b qkv", 6144, 4096, GemvInput::kRmsNorm, GemvOutput::kStore},
      {"8b o_proj", 4096, 4096, GemvInput::kBf16, GemvOutput::kResidual},
      {"8b gate/up", 24576, 4096, GemvInput::kRmsNorm, GemvOutput::kSwiGLU},
      {"8b down", 4096, 12288, GemvInput::kBf16, GemvOutput::kResidual},
      {"8b lm_head", 151936, 4096, GemvInput::kRmsNorm, GemvOutput::kStoreArgmax},
      {"0.6b qkv", 4096, 1024, GemvInput::kRmsNorm, GemvOutput::kStore},
      {"0.6b o_proj", 1024, 2048, GemvInput::kBf16, GemvOutput::kResidual},
      {"0.6b gate/up", 6144, 1024, GemvInput::kRmsNorm, GemvOutput::kSwiGLU},
      {"0.6b down", 1024, 3072, GemvInput::kBf16, GemvOutput::kResidual},
      {"0.6b lm_head", 151936, 1024, GemvInput::kRmsNorm, GemvOutput::kStoreArgmax},
  };
  const int reps = 40;
  for (const Shape& sh : shapes) {
    const size_t elems = size_t(sh.N) * sh.K;
    const size_t regions = pool_elems / elems;
    for (int bps : {3, 4}) {
      GemvArgs a;
      a.N = sh.N;
      a.K = sh.K;
      a.x_f32 = x.as<float>();
      a.norm_w = nw.as<float>();
      a.eps = 1e-6f;
      a.in_bf16 = in.as<bf16>();
      a.out_f32 = out_f.as<float>();
      a.out_bf16 = out_b.as<bf16>();
      a.sync = sync.as<int>();
      a.argmax_out = idx.as<int>();
      a.blocks_per_sm = bps;
      auto run = [&](int n) {
        for (int i = 0; i < n; ++i) {
          a.W = pool.as<bf16>() + (i % regions) * elems;
          launch_gemv(sh.in, sh.out, a, s.get());
        }
      };
      run(4);
      e0.record(s.get());
      run(reps);
      e1.record(s.get());
      s.synchronize();
      const double us = e1.elapsed_ms_since(e0) * 1e3 / reps;
      std::cout << "[lab] gemv " << sh.name << " N=" << sh.N << " K=" << sh.K << " bps=" << bps << ": " << us
                << " us, " << elems * 2 / us / 1e6 << " TB/s\n";
    }
  }
  struct Attn {
    const char* name;
    int H, KV, pos;
  };
  for (Attn at : {Attn{"8b", 32, 8, 100}, Attn{"0.6b", 16, 8, 100}, Attn{"8b", 32, 8, 2000}, Attn{"8b", 32, 8, 30}}) {
    const int S = 4096, Dh = 128;
    cuda::DeviceBuffer kc(size_t(at.KV) * S * Dh * 2), vc(size_t(at.KV) * S * Dh * 2);
    cuda::fill_uniform_bf16(kc.as<bf16>(), size_t(at.KV) * S * Dh, 1, 1.f, s.get());
    cuda::fill_uniform_bf16(vc.as<bf16>(), size_t(at.KV) * S * Dh, 2, 1.f, s.get());
    auto q = to_device(host_uniform(rng, size_t(at.H) * Dh, -1, 1));
    auto pos = to_device(std::vector<int>{at.pos});
    auto table = to_device(shuffled_table(rng, S, 16));
    auto counters = to_device(std::vector<int>(at.H, 0));
    cuda::DeviceBuffer scratch(decode_attention_scratch_floats(at.H, Dh) * 4), out(size_t(at.H) * Dh * 2);
    auto run = [&](int n) {
      for (int i = 0; i < n; ++i)
        launch_attention_decode(q.as<float>(), pages_of(kc, vc, S, 16), table.as<int>(), pos.as<int>(), at.H, at.KV,
                                Dh, S, scratch.as<float>(), counters.as<int>(), out.as<bf16>(), s.get());
    };
    run(4);
    e0.record(s.get());
    run(reps);
    e1.record(s.get());
    s.synchronize();
    std::cout << "[lab] attention decode " << at.name << " H=" << at.H << " KV=" << at.KV << " pos=" << at.pos << ": "
              << e1.elapsed_ms_since(e0) * 1e3 / reps << " us\n";
  }
  // The decode QKV step: the plain QKV GEMV, then the attention that applies the RoPE and writes
  // the KV cache (launch_attention_decode_rope); us per step.
  struct Qkv {
    const char* name;
    int H, KV, K, pos;
  };
  for (Qkv qs : {Qkv{"8b", 32, 8, 4096, 100}, Qkv{"0.6b", 16, 8, 1024, 100}}) {
    const int S = 4096, Dh = 128, N = (qs.H + 2 * qs.KV) * Dh;
    const size_t elems = size_t(N) * qs.K, regions = pool_elems / elems;
    cuda::DeviceBuffer kc(size_t(qs.KV) * S * Dh * 2), vc(size_t(qs.KV) * S * Dh * 2);
    cuda::fill_uniform_bf16(kc.as<bf16>(), size_t(qs.KV) * S * Dh, 1, 1.f, s.get());
    cuda::fill_uniform_bf16(vc.as<bf16>(), size_t(qs.KV) * S * Dh, 2, 1.f, s.get());
    auto inv = to_device(rope_inv_freq(Dh, 1e6));
    auto pos = to_device(std::vector<int>{qs.pos});
    auto table = to_device(shuffled_table(rng, S, 16));
    auto counters = to_device(std::vector<int>(qs.H, 0));
    cuda::DeviceBuffer scratch(decode_attention_scratch_floats(qs.H, Dh) * 4), out(size_t(qs.H) * Dh * 2);
    GemvArgs a;
    a.N = N;
    a.K = qs.K;
    a.x_f32 = x.as<float>();
    a.norm_w = nw.as<float>();
    a.eps = 1e-6f;
    a.out_f32 = out_f.as<float>();
    QkvRopeArgs rope;
    rope.inv_freq = inv.as<float>();
    rope.H = qs.H;
    rope.KV = qs.KV;
    rope.Dh = Dh;
    rope.max_seq = S;
    rope.cache = pages_of(kc, vc, S, 16);
    rope.block_table = table.as<int>();
    auto run = [&](int n) {
      for (int i = 0; i < n; ++i) {
        a.W = pool.as<bf16>() + (i % regions) * elems;
        launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStore, a, s.get());
        launch_attention_decode_rope(out_f.as<float>(), rope, 1e-6f, pos.as<int>(), scratch.as<float>(),
                                     counters.as<int>(), out.as<bf16>(), s.get());
      }
    };
    run(4);
    e0.record(s.get());
    run(reps);
    e1.record(s.get());
    s.synchronize();
    std::cout << "[lab] " << qs.name << " qkv store, attention with rope pos=" << qs.pos << ": "
              << e1.elapsed_ms_since(e0) * 1e3 / reps << " us\n";
  }
  return 0;
}
