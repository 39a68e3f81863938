// References the kernel tests share (kernels_test.cpp, attention_decode_test.cpp): one token's
// projection after bias, qk-norm and RoPE in double, RoPE's inverse frequencies, and the rows of a
// K/V cache or pool in head order.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace lg::qwen::test {

/// One token's projection after bias, qk-norm and RoPE, in double: q [H*Dh], k [KV*Dh], v [KV*Dh]
/// (rope_kv.cuh's formulas; the angle is formed in fp32, as in HF).
struct RopeRef {
  std::vector<double> q, k, v;
};
inline RopeRef rope_ref(const std::vector<double>& y, const float* bias, const float* qn, const float* kn,
                        const std::vector<float>& inv, int pos, int H, int KV, int Dh, float eps) {
  RopeRef r;
  for (int hd = 0; hd < H + 2 * KV; ++hd) {
    std::vector<double> v(Dh);
    for (int d = 0; d < Dh; ++d) v[d] = y[size_t(hd) * Dh + d] + (bias ? bias[hd * Dh + d] : 0.f);
    if (hd >= H + KV) {
      r.v.insert(r.v.end(), v.begin(), v.end());
      continue;
    }
    const bool is_q = hd < H;
    const float* nw = is_q ? qn : kn;
    if (nw) {
      double ss = 0;
      for (double e : v) ss += e * e;
      const double rs = 1.0 / std::sqrt(ss / Dh + eps);
      for (int d = 0; d < Dh; ++d) v[d] *= rs * nw[d];
    }
    const int hh = Dh / 2;
    for (int d = 0; d < Dh; ++d) {
      const int i = d < hh ? d : d - hh;
      const double ang = double(float(pos) * inv[i]);
      const double o = d < hh ? v[d] * std::cos(ang) - v[d + hh] * std::sin(ang)
                              : v[d] * std::cos(ang) + v[d - hh] * std::sin(ang);
      (is_q ? r.q : r.k).push_back(o);
    }
  }
  return r;
}

inline std::vector<float> inv_freq_of(int Dh, double theta) {
  std::vector<float> inv(Dh / 2);
  for (int i = 0; i < Dh / 2; ++i) inv[i] = 1.0f / std::pow(static_cast<float>(theta), float(2 * i) / float(Dh));
  return inv;
}

/// Rows [pos] of a bf16 cache [KV, S, Dh] in head order.
inline std::vector<float> cache_rows(const std::vector<float>& cache, int KV, int S, int Dh, int pos) {
  std::vector<float> out;
  for (int h = 0; h < KV; ++h)
    out.insert(out.end(), cache.begin() + (size_t(h) * S + pos) * Dh, cache.begin() + (size_t(h) * S + pos + 1) * Dh);
  return out;
}

/// Rows `row` of every KV head of a pool [KV, rows, Dh], in head order.
inline std::vector<float> pool_rows(const std::vector<float>& pool, int KV, int rows, int Dh, int row) {
  return cache_rows(pool, KV, rows, Dh, row);
}

}  // namespace lg::qwen::test
