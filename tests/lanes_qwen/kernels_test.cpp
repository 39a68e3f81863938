// Each hand-written kernel against a plain CPU loop (double precision) on fresh random inputs,
// with the outputs poisoned with NaN before the launch. The inputs are rounded to bf16 on the
// host first, so the reference sees exactly what the device sees; the bounds below then only have
// to cover fp32 accumulation order and the final rounding of bf16 outputs:
//   fp32 outputs from identical inputs: norm-wise relative error < 2e-5 (fp32 unit roundoff
//     6e-8 times a sqrt(K) ~ 100 growth for random-sign sums, with margin);
//   bf16 outputs: < 4e-3 (one bf16 rounding is at most 2^-9 = 2e-3 per element, doubled for
//     elements whose fp32 value sits near a rounding boundary and may round the other way);
//   GEMV with the RMSNorm prologue: < 1e-3 (the normalised input is rounded to bf16 on the device;
//     an element whose fp32 value differs in the last bit may round to the neighbouring bf16,
//     2^-8 on that one input element).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lanes/qwen/gemm_lt.h"
#include "lanes/qwen/kernels.h"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;

namespace {

const bf16* as_bf16(const cuda::DeviceBuffer& b) { return b.as<bf16>(); }

double silu_ref(double g) { return g / (1.0 + std::exp(-g)); }

struct GemvCase {
  int N, K;
};

}  // namespace

TEST(QwenKernels, GemvBf16InputStoreAndResidual) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  for (GemvCase c : {GemvCase{2, 8}, GemvCase{1026, 1000}, GemvCase{4096, 4096}, GemvCase{768, 12288}}) {
    auto W = random_bf16(rng, static_cast<size_t>(c.N) * c.K, -1, 1);
    auto in = random_bf16(rng, c.K, -1, 1);
    auto resid = random_f32(rng, c.N, -4, 4);
    std::vector<double> y(c.N);
    for (int n = 0; n < c.N; ++n) {
      double acc = 0;
      for (int k = 0; k < c.K; ++k) acc += double(W.f[size_t(n) * c.K + k]) * in.f[k];
      y[n] = acc;
    }
    auto dW = to_device(W.raw), din = to_device(in.raw);
    auto out = poisoned_f32(c.N);
    GemvArgs a;
    a.W = as_bf16(dW);
    a.N = c.N;
    a.K = c.K;
    a.in_bf16 = as_bf16(din);
    a.out_f32 = out.as<float>();
    launch_gemv(GemvInput::kBf16, GemvOutput::kStore, a, s.get());
    s.synchronize();
    EXPECT_LT(rel_err(download_f32(out, c.N), y), 2e-5) << "store N=" << c.N << " K=" << c.K;

    auto xr = to_device(resid);
    a.out_f32 = xr.as<float>();
    launch_gemv(GemvInput::kBf16, GemvOutput::kResidual, a, s.get());
    s.synchronize();
    std::vector<double> want(c.N);
    for (int n = 0; n < c.N; ++n) want[n] = resid[n] + y[n];
    EXPECT_LT(rel_err(download_f32(xr, c.N), want), 2e-5) << "residual N=" << c.N << " K=" << c.K;
  }
}

TEST(QwenKernels, GemvRmsNormPrologueStoreAndSwiGLU) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const float eps = 1e-6f;
  for (GemvCase c : {GemvCase{384, 64}, GemvCase{6144, 1024}, GemvCase{2048, 4096}}) {
    auto W = random_bf16(rng, static_cast<size_t>(c.N) * c.K, -1, 1);
    auto x = random_f32(rng, c.K, -3, 3);
    auto nw = random_f32(rng, c.K, 0.5f, 1.5f);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / c.K + eps);
    std::vector<float> h(c.K);
    for (int k = 0; k < c.K; ++k) h[k] = round_bf16(static_cast<float>(x[k] * inv * nw[k]));
    std::vector<double> y(c.N);
    for (int n = 0; n < c.N; ++n) {
      double acc = 0;
      for (int k = 0; k < c.K; ++k) acc += double(W.f[size_t(n) * c.K + k]) * h[k];
      y[n] = acc;
    }
    auto dW = to_device(W.raw), dx = to_device(x), dn = to_device(nw);
    auto out = poisoned_f32(c.N);
    GemvArgs a;
    a.W = as_bf16(dW);
    a.N = c.N;
    a.K = c.K;
    a.x_f32 = dx.as<float>();
    a.norm_w = dn.as<float>();
    a.eps = eps;
    a.out_f32 = out.as<float>();
    launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStore, a, s.get());
    s.synchronize();
    EXPECT_LT(rel_err(download_f32(out, c.N), y), 1e-3) << "rmsnorm+store N=" << c.N << " K=" << c.K;

    auto act = poisoned_bf16(c.N / 2);
    a.out_f32 = nullptr;
    a.out_bf16 = act.as<bf16>();
    launch_gemv(GemvInput::kRmsNorm, GemvOutput::kSwiGLU, a, s.get());
    s.synchronize();
    std::vector<double> want(c.N / 2);
    for (int i = 0; i < c.N / 2; ++i) want[i] = silu_ref(y[2 * i]) * y[2 * i + 1];
    EXPECT_LT(rel_err(download_bf16(act, c.N / 2), want), 4e-3) << "rmsnorm+swiglu N=" << c.N << " K=" << c.K;
  }
}

TEST(QwenKernels, GemvRefusesUnsupportedShapes) {
  LG_REQUIRE_GPU();
  GemvArgs a;
  a.N = 3;
  a.K = 64;
  EXPECT_THROW(launch_gemv(GemvInput::kBf16, GemvOutput::kStore, a, nullptr), Error);
  a.N = 4;
  a.K = 12;
  EXPECT_THROW(launch_gemv(GemvInput::kBf16, GemvOutput::kStore, a, nullptr), Error);
}

TEST(QwenKernels, RopeQkNormBiasAndKvWrite) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, T, pos0;
    bool bias, norm;
  };
  for (C c : {C{4, 2, 16, 5, 0, true, false}, C{4, 1, 32, 3, 7, false, true}, C{16, 8, 128, 4, 3000, false, true},
              C{8, 8, 64, 2, 100, true, true}}) {
    const int S = 4096, W = (c.H + 2 * c.KV) * c.Dh;
    const float eps = 1e-6f;
    const double theta = 1e6;
    auto qkv = random_f32(rng, size_t(c.T) * W, -2, 2);
    auto bias = random_f32(rng, W, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    std::vector<float> inv(c.Dh / 2);
    for (int i = 0; i < c.Dh / 2; ++i) inv[i] = 1.0f / powf(static_cast<float>(theta), float(2 * i) / float(c.Dh));
    auto dqkv = to_device(qkv), db = to_device(bias), dqn = to_device(qn), dkn = to_device(kn), dinv = to_device(inv);
    auto dpos = to_device(std::vector<int>{c.pos0});
    auto q = poisoned_f32(size_t(c.T) * c.H * c.Dh);
    auto kc = poisoned_bf16(size_t(c.KV) * S * c.Dh), vc = poisoned_bf16(size_t(c.KV) * S * c.Dh);
    launch_rope_kv(dqkv.as<float>(), c.bias ? db.as<float>() : nullptr, c.norm ? dqn.as<float>() : nullptr,
                   c.norm ? dkn.as<float>() : nullptr, dinv.as<float>(), dpos.as<int>(), eps, c.T, c.H, c.KV, c.Dh, S,
                   q.as<float>(), kc.as<bf16>(), vc.as<bf16>(), s.get());
    s.synchronize();
    std::vector<double> want_q, want_k, want_v;
    std::vector<float> got_k, got_v;
    auto gq = download_f32(q, size_t(c.T) * c.H * c.Dh);
    auto gk = download_bf16(kc, size_t(c.KV) * S * c.Dh), gv = download_bf16(vc, size_t(c.KV) * S * c.Dh);
    for (int t = 0; t < c.T; ++t) {
      const int pos = c.pos0 + t;
      for (int hd = 0; hd < c.H + 2 * c.KV; ++hd) {
        std::vector<double> v(c.Dh);
        for (int d = 0; d < c.Dh; ++d) v[d] = qkv[size_t(t) * W + hd * c.Dh + d] + (c.bias ? bias[hd * c.Dh + d] : 0.f);
        const int kvh = hd - c.H - c.KV;
        if (hd >= c.H + c.KV) {
          for (int d = 0; d < c.Dh; ++d) {
            want_v.push_back(v[d]);
            got_v.push_back(gv[(size_t(kvh) * S + pos) * c.Dh + d]);
          }
          continue;
        }
        const bool is_q = hd < c.H;
        if (c.norm) {
          double ss = 0;
          for (double e : v) ss += e * e;
          const double r = 1.0 / std::sqrt(ss / c.Dh + eps);
          for (int d = 0; d < c.Dh; ++d) v[d] *= r * (is_q ? qn[d] : kn[d]);
        }
        const int hh = c.Dh / 2;
        for (int d = 0; d < c.Dh; ++d) {
          const int i = d < hh ? d : d - hh;
          const double ang = double(float(pos) * inv[i]);  // the angle is formed in fp32, as in HF
          const double o = d < hh ? v[d] * std::cos(ang) - v[d + hh] * std::sin(ang)
                                    : v[d] * std::cos(ang) + v[d - hh] * std::sin(ang);
          if (is_q) {
            want_q.push_back(o);
          } else {
            want_k.push_back(o);
            got_k.push_back(gk[(size_t(hd - c.H) * S + pos) * c.Dh + d]);
          }
        }
      }
    }
    // q is written [T, H, Dh] in the same order as the loop above.
    EXPECT_LT(rel_err(gq, want_q), 2e-5) << "q Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_k, want_k), 4e-3) << "k cache Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_v, want_v), 4e-3) << "v cache Dh=" << c.Dh;
  }
}

namespace {

/// Causal GQA attention of query (t, h) at position p over cached positions 0..p, in double.
std::vector<double> attention_ref(const std::vector<float>& q, const Bf16Vec& k, const Bf16Vec& v, int T, int H, int KV,
                                  int Dh, int S, int pos0) {
  std::vector<double> out(size_t(T) * H * Dh);
  const double scale = 1.0 / std::sqrt(double(Dh));
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const int kvh = h / (H / KV), len = pos0 + t + 1;
      std::vector<double> sc(len);
      double m = -INFINITY;
      for (int j = 0; j < len; ++j) {
        double acc = 0;
        for (int d = 0; d < Dh; ++d) acc += double(q[(size_t(t) * H + h) * Dh + d]) * k.f[(size_t(kvh) * S + j) * Dh + d];
        sc[j] = acc * scale;
        m = std::max(m, sc[j]);
      }
      double l = 0;
      for (auto& e : sc) l += (e = std::exp(e - m));
      for (int d = 0; d < Dh; ++d) {
        double o = 0;
        for (int j = 0; j < len; ++j) o += sc[j] * v.f[(size_t(kvh) * S + j) * Dh + d];
        out[(size_t(t) * H + h) * Dh + d] = o / l;
      }
    }
  return out;
}

}  // namespace

TEST(QwenKernels, DecodeAttentionSplitKv) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, pos;
  };
  for (C c : {C{4, 2, 16, 0}, C{4, 1, 32, 36}, C{8, 8, 64, 1000}, C{32, 8, 128, 2047}, C{16, 2, 128, 5},
              C{8, 1, 64, 4095}}) {
    const int S = 4096;
    auto q = random_f32(rng, size_t(c.H) * c.Dh, -2, 2);
    auto k = random_bf16(rng, size_t(c.KV) * S * c.Dh, -2, 2), v = random_bf16(rng, size_t(c.KV) * S * c.Dh, -1, 1);
    auto dq = to_device(q), dk = to_device(k.raw), dv = to_device(v.raw), dpos = to_device(std::vector<int>{c.pos});
    auto scratch = poisoned_f32(decode_attention_scratch_floats(c.H, c.Dh));
    auto out = poisoned_bf16(size_t(c.H) * c.Dh);
    launch_attention_decode(dq.as<float>(), as_bf16(dk), as_bf16(dv), dpos.as<int>(), c.H, c.KV, c.Dh, S,
                            scratch.as<float>(), out.as<bf16>(), s.get());
    s.synchronize();
    auto want = attention_ref(q, k, v, 1, c.H, c.KV, c.Dh, S, c.pos);
    EXPECT_LT(rel_err(download_bf16(out, size_t(c.H) * c.Dh), want), 4e-3)
        << "H=" << c.H << " KV=" << c.KV << " Dh=" << c.Dh << " pos=" << c.pos;
  }
}

TEST(QwenKernels, PrefillAttentionCausal) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, T, pos0;
  };
  for (C c : {C{4, 2, 16, 7, 0}, C{4, 1, 32, 33, 0}, C{8, 4, 64, 17, 40}, C{16, 8, 128, 130, 0}}) {
    const int S = 512;
    auto q = random_f32(rng, size_t(c.T) * c.H * c.Dh, -2, 2);
    auto k = random_bf16(rng, size_t(c.KV) * S * c.Dh, -2, 2), v = random_bf16(rng, size_t(c.KV) * S * c.Dh, -1, 1);
    auto dq = to_device(q), dk = to_device(k.raw), dv = to_device(v.raw), dpos = to_device(std::vector<int>{c.pos0});
    auto out = poisoned_bf16(size_t(c.T) * c.H * c.Dh);
    launch_attention_prefill(dq.as<float>(), as_bf16(dk), as_bf16(dv), dpos.as<int>(), c.T, c.H, c.KV, c.Dh, S,
                             out.as<bf16>(), s.get());
    s.synchronize();
    auto want = attention_ref(q, k, v, c.T, c.H, c.KV, c.Dh, S, c.pos0);
    EXPECT_LT(rel_err(download_bf16(out, size_t(c.T) * c.H * c.Dh), want), 4e-3)
        << "H=" << c.H << " KV=" << c.KV << " Dh=" << c.Dh << " T=" << c.T;
  }
}

TEST(QwenKernels, RmsNormRowsSwiGLUEmbedArgmax) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const int T = 5, D = 1000;
  auto x = random_f32(rng, size_t(T) * D, -3, 3);
  auto w = random_f32(rng, D, 0.5f, 1.5f);
  auto dx = to_device(x), dw = to_device(w);
  auto h = poisoned_bf16(size_t(T) * D);
  launch_rmsnorm_rows(dx.as<float>(), dw.as<float>(), T, D, 1e-6f, h.as<bf16>(), s.get());
  s.synchronize();
  std::vector<double> want(size_t(T) * D);
  for (int t = 0; t < T; ++t) {
    double ss = 0;
    for (int k = 0; k < D; ++k) ss += double(x[t * D + k]) * x[t * D + k];
    const double r = 1.0 / std::sqrt(ss / D + 1e-6);
    for (int k = 0; k < D; ++k) want[t * D + k] = x[t * D + k] * r * w[k];
  }
  EXPECT_LT(rel_err(download_bf16(h, want.size()), want), 4e-3);

  const size_t n = 3 * 1001;
  auto gu = random_f32(rng, 2 * n, -6, 6);
  auto dgu = to_device(gu);
  auto act = poisoned_bf16(n);
  launch_swiglu(dgu.as<float>(), n, act.as<bf16>(), s.get());
  s.synchronize();
  std::vector<double> want_act(n);
  for (size_t i = 0; i < n; ++i) want_act[i] = silu_ref(gu[2 * i]) * gu[2 * i + 1];
  EXPECT_LT(rel_err(download_bf16(act, n), want_act), 4e-3);

  const int V = 300;
  auto table = random_bf16(rng, size_t(V) * D, -1, 1);
  std::vector<int> toks{7, 0, 299, 7, 123};
  auto dt = to_device(table.raw), dtok = to_device(toks);
  auto ex = poisoned_f32(size_t(T) * D);
  launch_embed(as_bf16(dt), dtok.as<int>(), T, D, ex.as<float>(), s.get());
  s.synchronize();
  auto gex = download_f32(ex, size_t(T) * D);
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < D; ++k) ASSERT_EQ(gex[t * D + k], table.f[size_t(toks[t]) * D + k]) << t << "," << k;

  for (int V2 : {1, 2048, 151936}) {
    auto logits = random_f32(rng, V2, -10, 10);
    std::uniform_int_distribution<int> pick(0, V2 - 1);
    const int a = pick(rng), b = pick(rng);
    logits[a] = logits[b] = 50.f;  // a tie: the lower index must win
    auto dl = to_device(logits);
    auto out = to_device(std::vector<int>{-1});
    launch_argmax(dl.as<float>(), V2, out.as<int>(), s.get());
    s.synchronize();
    int got = -1;
    out.download(&got, sizeof got);
    EXPECT_EQ(got, std::min(a, b)) << "V=" << V2;
  }
}

TEST(QwenKernels, CublasLtGemmWithResidual) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  LtGemm gemm;
  struct C {
    int T, N, K;
  };
  for (C c : {C{3, 64, 64}, C{37, 640, 1024}, C{512, 1024, 2048}}) {
    auto in = random_bf16(rng, size_t(c.T) * c.K, -1, 1), W = random_bf16(rng, size_t(c.N) * c.K, -1, 1);
    auto resid = random_f32(rng, size_t(c.T) * c.N, -5, 5);
    std::vector<double> y(size_t(c.T) * c.N);
    for (int t = 0; t < c.T; ++t)
      for (int n = 0; n < c.N; ++n) {
        double acc = 0;
        for (int k = 0; k < c.K; ++k) acc += double(in.f[size_t(t) * c.K + k]) * W.f[size_t(n) * c.K + k];
        y[size_t(t) * c.N + n] = acc;
      }
    auto din = to_device(in.raw), dW = to_device(W.raw);
    auto out = poisoned_f32(y.size());
    gemm.matmul(as_bf16(din), as_bf16(dW), out.as<float>(), c.T, c.N, c.K, false, s.get());
    s.synchronize();
    EXPECT_LT(rel_err(download_f32(out, y.size()), y), 2e-5) << c.T << "x" << c.N << "x" << c.K;
    auto xr = to_device(resid);
    gemm.matmul(as_bf16(din), as_bf16(dW), xr.as<float>(), c.T, c.N, c.K, true, s.get());
    s.synchronize();
    for (size_t i = 0; i < y.size(); ++i) y[i] += resid[i];
    EXPECT_LT(rel_err(download_f32(xr, y.size()), y), 2e-5) << "accumulate " << c.T << "x" << c.N << "x" << c.K;
  }
}
