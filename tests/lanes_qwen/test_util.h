// Helpers for the hand-written lane's GPU tests: fresh random inputs (seed printed on failure),
// bf16 rounding as the device does it, NaN-poisoned device outputs, and norm-wise error.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

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
