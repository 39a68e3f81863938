// The arithmetic of a sampled draw (runtime/draw.h), shared by the host reference and the device
// kernel (runtime/cuda/row_draws.cu) so that both pick the same token from the same logits row,
// bit for bit. Floating point that could differ between a CPU and a GPU is avoided: the softmax
// weights use an exp of our own made of correctly rounded IEEE operations (no library expf, no
// contraction into FMAs the other side would not make), and every sum, comparison and cut is on
// 40-bit fixed-point integers. C++17: nvcc compiles this header too.
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
/// sampler order, temperature, then min_p, top-k, top-p, then a draw with the uniform `u`.
struct DrawParams {
  float inv_temperature = 1;  ///< 1 / temperature, > 0 (inf for a temperature whose inverse overflows)
  int32_t top_k = 0;          ///< keep the k likeliest; 0: off
  float min_p = 0;            ///< drop tokens whose weight (probability over the likeliest's) is below; 0: off
  double top_p = 1;           ///< the shortest head of the order by logit holding this much mass; 1: off
  double u = 0;               ///< the draw's uniform in [0, 1), from the sequence's seeded generator
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

/// The draw's point in [0, mass): floor(u * mass); the token is the first (by id) whose running
/// sum of weights passes it.
LG_DRAW_HD uint64_t draw_target(double u, uint64_t mass) {
  const double t = u * static_cast<double>(mass);
  const uint64_t target = t >= static_cast<double>(mass) ? mass - 1 : static_cast<uint64_t>(t);
  return target >= mass ? mass - 1 : target;
}

}  // namespace draw
}  // namespace lg
