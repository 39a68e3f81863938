// The arithmetic of a sampled draw (runtime/draw.h), shared by the host reference and the device
// kernel (runtime/cuda/row_draws.cu) so that both pick the same token from the same logits row,
// bit for bit. Floating point that could differ between a CPU and a GPU is avoided: the softmax
// weights use an exp of our own made of correctly rounded IEEE operations (no library expf, no
// contraction into FMAs the other side would not make), every sum, comparison and cut is on
// 40-bit fixed-point integers, and the race that draws the token uses a logarithm of our own
// and integer random bits. C++17: nvcc compiles this header too.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define LG_DRAW_HD __host__ __device__ __forceinline__
#else
#define LG_DRAW_HD inline
#endif

namespace lg {

/// What a sampled pick needs once the penalties are applied (runtime/sampler.h builds it): vLLM's
/// sampler order, temperature, then min_p, top-k, top-p, then the race of the random `key`.
struct DrawParams {
  float inv_temperature = 1;  ///< 1 / temperature, > 0 (inf for a temperature whose inverse overflows)
  int32_t top_k = 0;          ///< keep the k likeliest; 0: off
  float min_p = 0;            ///< drop tokens whose weight (probability over the likeliest's) is below; 0: off
  double top_p = 1;           ///< the shortest head of the order by logit holding this much mass; 1: off
  uint64_t key = 0;           ///< the draw's random key, from the sequence's seeded generator (race_uniform)
};

namespace draw {

/// Fixed-point scale of a weight: w in [0, 1] becomes round(w * 2^40), so a row of up to 2^17
/// tokens sums below 2^58 and a weight under 2^-41 (probability under ~5e-13 of the likeliest
/// token's) counts as zero.
constexpr int kFixedBits = 40;

LG_DRAW_HD float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

LG_DRAW_HD float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

LG_DRAW_HD float sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

LG_DRAW_HD float fma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

LG_DRAW_HD float div(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

LG_DRAW_HD float round_even(float x) {
#ifdef __CUDA_ARCH__
  return rintf(x);
#else
  return std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
#endif
}

/// e^x for x <= 0, to about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, Cody and
/// Waite), e^r by its Taylor series to r^7 (error below 2^-27 relative), times 2^n built exactly.
/// Zero below -87 (where e^x leaves the normal floats), and for -inf.
LG_DRAW_HD float exp_nonpositive(float x) {
  if (!(x >= -87.f)) return 0.f;
  const float n = round_even(mul(x, 1.44269502f));
  float r = fma(n, -0.693145751953125f, x);
  r = fma(n, -1.42860677e-06f, r);
  float p = 1.f / 5040.f;
  p = fma(p, r, 1.f / 720.f);
  p = fma(p, r, 1.f / 120.f);
  p = fma(p, r, 1.f / 24.f);
  p = fma(p, r, 1.f / 6.f);
  p = fma(p, r, 0.5f);
  p = fma(p, r, 1.f);
  p = fma(p, r, 1.f);
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;  // n in [-126, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return mul(p, scale);
}

/// A token's weight, its probability over the likeliest token's: e^((l - max) / T), exactly 1
/// for the largest logit (so a T whose inverse is inf still keeps the argmax: 0 * inf is NaN).
LG_DRAW_HD float weight(float logit, float max_logit, float inv_temperature) {
  if (logit == max_logit) return 1.f;
  return exp_nonpositive(mul(sub(logit, max_logit), inv_temperature));
}

/// round(w * 2^40): exact in float (a power-of-two scale), rounded to nearest, ties to even.
LG_DRAW_HD uint64_t fixed(float w) {
  const float scaled = mul(w, 1099511627776.f);  // 2^40
#ifdef __CUDA_ARCH__
  return __float2ull_rn(scaled);
#else
  return static_cast<uint64_t>(std::nearbyint(scaled));
#endif
}

/// The order of candidates as one integer: larger logit first, then lower id (so ties never
/// depend on a sort's internals); -0 and +0 are one logit. A larger key comes first.
LG_DRAW_HD uint64_t key(float logit, int32_t id) {
  if (logit == 0.f) logit = 0.f;
  uint32_t b;
  std::memcpy(&b, &logit, sizeof b);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<uint64_t>(b) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(id));
}

/// Mass the nucleus must reach: ceil(top_p * mass), at least 1, at most mass.
LG_DRAW_HD uint64_t nucleus_need(double top_p, uint64_t mass) {
  const double t = top_p * static_cast<double>(mass);
#ifdef __CUDA_ARCH__
  const double up = ::ceil(t);
#else
  const double up = std::ceil(t);
#endif
  uint64_t need = t >= static_cast<double>(mass) ? mass : static_cast<uint64_t>(up);
  return need < 1 ? 1 : (need > mass ? mass : need);
}

/// Token `id`'s uniform for the draw of `key`: (j + 1/2) / 2^23 for j the top 23 bits of
/// SplitMix64 (Steele et al. 2014) of key + (id + 1) * 2^64/phi, so in (0, 1), exact in float, as is
/// 1 - u. Every token of a draw gets its own, from the key alone: a counter-based stream.
LG_DRAW_HD float race_uniform(uint64_t key, int32_t id) {
  uint64_t z = key + static_cast<uint64_t>(static_cast<uint32_t>(id) + 1u) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(2 * (z >> 41) + 1) * 5.9604644775390625e-08f;  // 2^-24
}

/// -ln(u) for u in (0, 1) (an Exp(1) variate of a uniform), to a few ulp: u = m 2^e with m in
/// [sqrt(1/2), sqrt(2)), ln m = 2 atanh(f / (2 + f)) for f = m - 1 (exact) by its series to s^13
/// (error below 2^-36), e ln2 in two parts. Correctly rounded operations only, as exp_nonpositive.
LG_DRAW_HD float neg_log_unit(float u) {
  uint32_t bits;
  std::memcpy(&bits, &u, sizeof bits);
  int e = static_cast<int>(bits >> 23) - 127;
  bits = (bits & 0x7FFFFFu) | 0x3F800000u;
  float m;
  std::memcpy(&m, &bits, sizeof m);
  if (m > 1.41421354f) {
    m = mul(m, 0.5f);
    ++e;
  }
  const float f = sub(m, 1.f);
  const float s = div(f, 2.f + f);
  const float z = mul(s, s);
  float p = 1.f / 13.f;
  p = fma(p, z, 1.f / 11.f);
  p = fma(p, z, 1.f / 9.f);
  p = fma(p, z, 1.f / 7.f);
  p = fma(p, z, 1.f / 5.f);
  p = fma(p, z, 1.f / 3.f);
  const float two_s = 2.f * s;  // exact
  const float ln_m = fma(two_s, mul(z, p), two_s);
  const float fe = static_cast<float>(e);
  const float t = fma(fe, -1.42860677e-06f, -ln_m);
  return fma(fe, -0.693145751953125f, t);  // e * ln2's high part is exact (16 bits times 5)
}

/// A token's place in the race that draws it (the exponential race, i.e. the Gumbel-max trick):
/// E / w for E = -ln(race_uniform) and w its weight, packed with its id so that the smallest
/// packed value is the drawn token, the lower id on a tie. The token with the least E_i / w_i is
/// token i with probability w_i / sum(w), as an inverse CDF draws it; but where an inverse CDF's
/// pick moves when any weight before it in its order rounds otherwise (the logits of a batch
/// against a run alone), the race's moves only when its two best places nearly tie.
LG_DRAW_HD uint64_t race_place(float w, uint64_t key, int32_t id) {
  const float place = div(neg_log_unit(race_uniform(key, id)), w);
  uint32_t b;
  std::memcpy(&b, &place, sizeof b);  // positive: its bits order as the values do
  return (static_cast<uint64_t>(b) << 32) | static_cast<uint32_t>(id);
}

/// race_place(w, key, id), or ~0 (never the least) when a bound shows it above `best`, a place
/// already met (the skip does not change the race's winner): -ln u >= 1 - u, and neg_log_unit is
/// within 2^-17 of -ln u, so (1 - u)(1 - 2^-16) / w is at most the place. Met likeliest first,
/// a row of 151,936 normal logits takes 2-8 logarithms a draw at temperatures 0.7-1.5
/// (bench/RESULTS.md, thirty-ninth session), not one a token.
LG_DRAW_HD uint64_t race_place_below(float w, uint64_t key, int32_t id, uint64_t best) {
  const float u = race_uniform(key, id);
  const float floor_place = div(mul(sub(1.f, u), 0.9999847412109375f), w);
  uint32_t b;
  std::memcpy(&b, &floor_place, sizeof b);
  if ((static_cast<uint64_t>(b) << 32) > best) return ~0ull;
  return race_place(w, key, id);
}

}  // namespace draw
}  // namespace lg
