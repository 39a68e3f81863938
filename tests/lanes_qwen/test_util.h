// Helpers for the hand-written lane's GPU tests: fresh random inputs (seed printed on failure),
// bf16 rounding as the device does it, NaN-poisoned device outputs, and norm-wise error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "runtime/cuda/device.h"
#include "support/dtype.h"

namespace lg::qwen::test {

#define LG_REQUIRE_GPU() \
  if (!::lg::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device"

/// A generator seeded from std::random_device: every run checks new inputs. The seed is
/// recorded in the test's output so a failure can be reproduced.
inline std::mt19937_64 fresh_rng() {
  const uint64_t seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return std::mt19937_64(seed);
}

/// Values rounded to bf16 (what the device stores) and their raw bits.
struct Bf16Vec {
  std::vector<float> f;      ///< the exact values the device sees
  std::vector<uint16_t> raw; ///< to upload
};

inline Bf16Vec random_bf16(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  Bf16Vec v;
  v.f.resize(n);
  v.raw.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v.raw[i] = f32_to_bf16(u(rng));
    v.f[i] = bf16_to_f32(v.raw[i]);
  }
  return v;
}

inline std::vector<float> random_f32(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

template <class T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

/// A device buffer of n floats (or bf16) filled with NaN, so an element the kernel forgets to
/// write fails the comparison.
inline cuda::DeviceBuffer poisoned_f32(size_t n) { return to_device(std::vector<float>(n, std::nanf(""))); }
inline cuda::DeviceBuffer poisoned_bf16(size_t n) { return to_device(std::vector<uint16_t>(n, 0x7fc0)); }

inline std::vector<float> download_f32(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<float> v(n);
  b.download(v.data(), n * sizeof(float));
  return v;
}
inline std::vector<float> download_bf16(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<uint16_t> raw(n);
  b.download(raw.data(), n * sizeof(uint16_t));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = bf16_to_f32(raw[i]);
  return v;
}

inline std::vector<int> download_ints(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<int> v(n);
  b.download(v.data(), n * sizeof(int));
  return v;
}

/// ||got - want|| / ||want|| over all elements; +inf if any element of `got` is not finite.
inline double rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

inline double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  return rel_err(got, std::vector<double>(want.begin(), want.end()));
}

/// The prompt that the fixtures' `generate` call attended to: it was given token id 0 as the pad
/// id, so transformers masked every id 0 out of the prompt (and the positions after it shifted
/// down by one), while `prefill_last_logits` come from a plain forward over all ids. Greedy ids
/// are therefore compared after a prefill of the prompt without its zeros (as tests/lanes_cpu
/// does); only the 64-token case of each tiny fixture holds an id 0.
inline std::vector<int32_t> prompt_generate_attended(const std::vector<int32_t>& prompt) {
  std::vector<int32_t> out;
  for (int32_t t : prompt)
    if (t != 0) out.push_back(t);
  return out;
}

/// A paged KV pool for kernel tests (kernels.h: KvPages): sequences of the given lengths whose
/// blocks come from a shuffled list of all the pool's blocks, so their tables are scattered and
/// interleaved, with `spare` blocks no sequence holds (the caller poisons them: a kernel that
/// reads outside a sequence's blocks then reads NaN).
struct TestPages {
  int bs = 0, num_blocks = 0;
  std::vector<std::vector<int>> tables;  ///< per sequence, ceil(len / bs) blocks
  int rows() const { return num_blocks * bs; }
  /// Pool row of position p of sequence s.
  int row(size_t s, int p) const { return tables[s][static_cast<size_t>(p / bs)] * bs + p % bs; }
  /// The tables as one [B, stride] array (the ragged kernel's), unused entries -1.
  std::vector<int> padded(int stride) const {
    std::vector<int> out(tables.size() * static_cast<size_t>(stride), -1);
    for (size_t s = 0; s < tables.size(); ++s) std::copy(tables[s].begin(), tables[s].end(), out.begin() + s * stride);
    return out;
  }
  int widest() const {
    size_t w = 1;
    for (const auto& t : tables) w = std::max(w, t.size());
    return static_cast<int>(w);
  }
};

/// The kernels' view of bf16 pools k/v laid out as p says.
inline KvPages kv_pages(const cuda::DeviceBuffer& k, const cuda::DeviceBuffer& v, const TestPages& p) {
  KvPages c;
  c.k = k.as<bf16>();
  c.v = v.as<bf16>();
  c.rows = p.rows();
  c.block_size = p.bs;
  return c;
}

/// The RoPE decode attentions' arguments for a test's buffers (kernels.h: QkvRopeArgs); bias,
/// q_norm and k_norm may be null, max_seq 0 for the batched launch (which ignores it).
inline QkvRopeArgs rope_args_for(int H, int KV, int Dh, const KvPages& cache, const int* block_table,
                                 const float* inv_freq, const float* bias, const float* q_norm, const float* k_norm,
                                 int max_seq = 0) {
  QkvRopeArgs r;
  r.bias = bias;
  r.q_norm = q_norm;
  r.k_norm = k_norm;
  r.inv_freq = inv_freq;
  r.H = H;
  r.KV = KV;
  r.Dh = Dh;
  r.max_seq = max_seq;
  r.cache = cache;
  r.block_table = block_table;
  return r;
}

inline TestPages scattered_pages(std::mt19937_64& rng, const std::vector<int>& lens, int bs, int spare) {
  TestPages p;
  p.bs = bs;
  int need = 0;
  for (int n : lens) need += (n + bs - 1) / bs;
  p.num_blocks = need + spare;
  std::vector<int> ids(static_cast<size_t>(p.num_blocks));
  for (int i = 0; i < p.num_blocks; ++i) ids[static_cast<size_t>(i)] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (int n : lens) {
    std::vector<int> t(static_cast<size_t>((n + bs - 1) / bs));
    for (auto& b : t) b = ids[next++];
    p.tables.push_back(std::move(t));
  }
  return p;
}

/// A pool [KV, rows, Dh] of bf16 NaN with the logical rows of each sequence (logical[s]: bf16
/// [KV, lens[s], Dh]) scattered to where its table puts them.
inline std::vector<uint16_t> scatter_to_pool(const TestPages& p, const std::vector<const Bf16Vec*>& logical,
                                             const std::vector<int>& lens, int KV, int Dh) {
  std::vector<uint16_t> pool(static_cast<size_t>(KV) * p.rows() * Dh, 0x7fc0);
  for (size_t s = 0; s < logical.size(); ++s)
    for (int h = 0; h < KV; ++h)
      for (int j = 0; j < lens[s]; ++j)
        std::copy_n(logical[s]->raw.begin() + (static_cast<size_t>(h) * lens[s] + j) * Dh, Dh,
                    pool.begin() + (static_cast<size_t>(h) * p.rows() + p.row(s, j)) * Dh);
  return pool;
}

/// The logical rows [KV, len, Dh] of sequence s gathered back out of a downloaded pool.
inline std::vector<float> gather_from_pool(const TestPages& p, const std::vector<float>& pool, size_t s, int len, int KV,
                                           int Dh) {
  std::vector<float> out(static_cast<size_t>(KV) * len * Dh);
  for (int h = 0; h < KV; ++h)
    for (int j = 0; j < len; ++j)
      std::copy_n(pool.begin() + (static_cast<size_t>(h) * p.rows() + p.row(s, j)) * Dh, Dh,
                  out.begin() + (static_cast<size_t>(h) * len + j) * Dh);
  return out;
}

/// LG_SHARED_DIR / LG_SOURCE_DIR: the environment overrides the compiled-in paths (the GPU machine
/// has the repository somewhere else and the fixtures copied into it).
inline std::string shared_dir() {
  const char* e = std::getenv("LG_SHARED_DIR");
  return e ? e : LG_SHARED_DIR;
}
inline std::string source_dir() {
  const char* e = std::getenv("LG_SOURCE_DIR");
  return e ? e : LG_SOURCE_DIR;
}

}  // namespace lg::qwen::test
