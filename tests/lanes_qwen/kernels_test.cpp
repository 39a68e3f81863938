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
//     2^-8 on that one input element); with a bf16 output after it (SwiGLU, the K/V cache of
//     the QKV-RoPE epilogue) the bf16 bound, 4e-3, which has room for both.
// Kernels that hand work between blocks through counters (decode attention, the QKV-RoPE and
// argmax epilogues) are launched twice on fresh poison: the second launch checks that the first
// left its counters at zero. GEMVs also run with a one-block-per-SM grid, where every warp loops
// over many row pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda/fill.h"
#include "runtime/cuda/gemm_lt.h"
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

/// Runs a kStore GEMV with one block per SM (every warp loops over many row pairs) and with the
/// default grid, each time into a fresh NaN-poisoned output, and checks it against `y`.
void expect_store_on_both_grids(GemvInput in, GemvArgs a, const std::vector<double>& y, double tol,
                                const std::string& what, const cuda::Stream& s) {
  for (int bps : {1, 0}) {
    auto out = poisoned_f32(y.size());
    a.blocks_per_sm = bps;
    a.out_f32 = out.as<float>();
    launch_gemv(in, GemvOutput::kStore, a, s.get());
    s.synchronize();
    EXPECT_LT(rel_err(download_f32(out, y.size()), y), tol) << what << " bps=" << bps;
  }
}

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
    GemvArgs a;
    a.W = as_bf16(dW);
    a.N = c.N;
    a.K = c.K;
    a.in_bf16 = as_bf16(din);
    expect_store_on_both_grids(GemvInput::kBf16, a, y, 2e-5,
                               "store N=" + std::to_string(c.N) + " K=" + std::to_string(c.K), s);

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
  // K = 8192: above kGemvNormStageMaxK, the prologue re-reads x and w instead of staging x * w.
  for (GemvCase c : {GemvCase{384, 64}, GemvCase{6144, 1024}, GemvCase{2048, 4096}, GemvCase{512, 8192}}) {
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
    GemvArgs a;
    a.W = as_bf16(dW);
    a.N = c.N;
    a.K = c.K;
    a.x_f32 = dx.as<float>();
    a.norm_w = dn.as<float>();
    a.eps = eps;
    expect_store_on_both_grids(GemvInput::kRmsNorm, a, y, 1e-3,
                               "rmsnorm+store N=" + std::to_string(c.N) + " K=" + std::to_string(c.K), s);

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

namespace {

/// One token's projection after bias, qk-norm and RoPE, in double: q [H*Dh], k [KV*Dh], v [KV*Dh]
/// (rope_kv.cuh's formulas; the angle is formed in fp32, as in HF).
struct RopeRef {
  std::vector<double> q, k, v;
};
RopeRef rope_ref(const std::vector<double>& y, const float* bias, const float* qn, const float* kn,
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

std::vector<float> inv_freq_of(int Dh, double theta) {
  std::vector<float> inv(Dh / 2);
  for (int i = 0; i < Dh / 2; ++i) inv[i] = 1.0f / powf(static_cast<float>(theta), float(2 * i) / float(Dh));
  return inv;
}

/// Rows [pos] of a bf16 cache [KV, S, Dh] in head order.
std::vector<float> cache_rows(const std::vector<float>& cache, int KV, int S, int Dh, int pos) {
  std::vector<float> out;
  for (int h = 0; h < KV; ++h)
    out.insert(out.end(), cache.begin() + (size_t(h) * S + pos) * Dh, cache.begin() + (size_t(h) * S + pos + 1) * Dh);
  return out;
}

}  // namespace

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
    auto qkv = random_f32(rng, size_t(c.T) * W, -2, 2);
    auto bias = random_f32(rng, W, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    const std::vector<float> inv = inv_freq_of(c.Dh, 1e6);
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
      const std::vector<double> y(qkv.begin() + size_t(t) * W, qkv.begin() + size_t(t + 1) * W);
      RopeRef r = rope_ref(y, c.bias ? bias.data() : nullptr, c.norm ? qn.data() : nullptr,
                           c.norm ? kn.data() : nullptr, inv, c.pos0 + t, c.H, c.KV, c.Dh, eps);
      want_q.insert(want_q.end(), r.q.begin(), r.q.end());
      want_k.insert(want_k.end(), r.k.begin(), r.k.end());
      want_v.insert(want_v.end(), r.v.begin(), r.v.end());
      auto k_rows = cache_rows(gk, c.KV, S, c.Dh, c.pos0 + t), v_rows = cache_rows(gv, c.KV, S, c.Dh, c.pos0 + t);
      got_k.insert(got_k.end(), k_rows.begin(), k_rows.end());
      got_v.insert(got_v.end(), v_rows.begin(), v_rows.end());
    }
    // q is written [T, H, Dh] in the same order as the loop above.
    EXPECT_LT(rel_err(gq, want_q), 2e-5) << "q Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_k, want_k), 4e-3) << "k cache Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_v, want_v), 4e-3) << "v cache Dh=" << c.Dh;
  }
}

TEST(QwenKernels, GemvRefusesArgmaxWithoutItsBuffers) {
  LG_REQUIRE_GPU();
  GemvArgs a;
  a.N = 4 * 64;
  a.K = 64;
  EXPECT_THROW(launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStoreArgmax, a, nullptr), Error);  // no sync area
  int dummy = 0;
  a.sync = &dummy;  // never dereferenced: the launcher refuses before launching
  EXPECT_THROW(launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStoreArgmax, a, nullptr), Error);  // no argmax_out
}

// The LM-head form: logits stored and their argmax found by the last block (lowest index on a
// tie, as torch.argmax), including a tie across blocks.
TEST(QwenKernels, GemvStoreArgmax) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  auto sync = to_device(std::vector<int>(kGemvSyncInts, 0));
  for (GemvCase c : {GemvCase{2, 64}, GemvCase{2048, 256}, GemvCase{151936, 1024}}) {
    auto W = random_bf16(rng, static_cast<size_t>(c.N) * c.K, -1, 1);
    auto in = random_bf16(rng, c.K, -1, 1);
    // Two rows made equal to the largest row: a tie the lower index must win.
    std::vector<double> y(c.N);
    auto dot = [&](int n) {
      double acc = 0;
      for (int k = 0; k < c.K; ++k) acc += double(W.f[size_t(n) * c.K + k]) * in.f[k];
      return acc;
    };
    for (int n = 0; n < c.N; ++n) y[n] = dot(n);
    const int top = static_cast<int>(std::max_element(y.begin(), y.end()) - y.begin());
    std::uniform_int_distribution<int> pick(0, c.N - 1);
    const int a1 = pick(rng), a2 = pick(rng);
    for (int t : {a1, a2}) {
      std::copy(W.raw.begin() + size_t(top) * c.K, W.raw.begin() + size_t(top + 1) * c.K, W.raw.begin() + size_t(t) * c.K);
      std::copy(W.f.begin() + size_t(top) * c.K, W.f.begin() + size_t(top + 1) * c.K, W.f.begin() + size_t(t) * c.K);
      y[t] = y[top];
    }
    const int want = std::min({top, a1, a2});
    auto dW = to_device(W.raw), din = to_device(in.raw);
    for (int bps : {1, 0, 0}) {
      auto out = poisoned_f32(c.N);
      auto idx = to_device(std::vector<int>{-1});
      GemvArgs a;
      a.W = as_bf16(dW);
      a.N = c.N;
      a.K = c.K;
      a.in_bf16 = as_bf16(din);
      a.out_f32 = out.as<float>();
      a.argmax_out = idx.as<int>();
      a.sync = sync.as<int>();
      a.blocks_per_sm = bps;
      launch_gemv(GemvInput::kBf16, GemvOutput::kStoreArgmax, a, s.get());
      s.synchronize();
      EXPECT_LT(rel_err(download_f32(out, c.N), y), 2e-5) << "N=" << c.N;
      EXPECT_EQ(download_ints(idx, 1)[0], want) << "N=" << c.N << " bps=" << bps;
    }
    EXPECT_EQ(download_ints(sync, 1 + kGemvSyncArgmaxCounter)[kGemvSyncArgmaxCounter], 0);
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
              C{8, 1, 64, 4095}, C{28, 4, 128, 33}, C{12, 2, 64, 130}}) {
    const int S = 4096;
    auto q = random_f32(rng, size_t(c.H) * c.Dh, -2, 2);
    auto k = random_bf16(rng, size_t(c.KV) * S * c.Dh, -2, 2), v = random_bf16(rng, size_t(c.KV) * S * c.Dh, -1, 1);
    auto dq = to_device(q), dk = to_device(k.raw), dv = to_device(v.raw), dpos = to_device(std::vector<int>{c.pos});
    auto counters = to_device(std::vector<int>(c.H, 0));
    auto want = attention_ref(q, k, v, 1, c.H, c.KV, c.Dh, S, c.pos);
    for (int rep = 0; rep < 2; ++rep) {  // the second launch needs the counters the first left at zero
      auto scratch = poisoned_f32(decode_attention_scratch_floats(c.H, c.Dh));
      auto out = poisoned_bf16(size_t(c.H) * c.Dh);
      launch_attention_decode(dq.as<float>(), as_bf16(dk), as_bf16(dv), dpos.as<int>(), c.H, c.KV, c.Dh, S,
                              scratch.as<float>(), counters.as<int>(), out.as<bf16>(), s.get());
      s.synchronize();
      EXPECT_LT(rel_err(download_bf16(out, size_t(c.H) * c.Dh), want), 4e-3)
          << "H=" << c.H << " KV=" << c.KV << " Dh=" << c.Dh << " pos=" << c.pos << " launch " << rep;
    }
    EXPECT_EQ(download_ints(counters, c.H), std::vector<int>(c.H, 0));
  }
}

// The decode attention fed by the raw QKV projection (launch_attention_decode_rope): this
// position's K/V rows written to the caches against the RoPE reference (bf16 bound, 4e-3), and the
// output against attention_ref over the reference query and the caches the device holds
// afterwards (random earlier rows, this position's row as the kernel wrote it; bf16 output bound).
// The query is fp32 from the same fp32 inputs on both sides, so it adds only fp32 roundoff.
// Launched twice (the split counters must be back at zero). Positions: one chunk of the lane's
// 128 keys, written by its block without a merge (0, 5, 33, 77), and merged splits (131, 2000,
// 4095); GQA groups 1, 2, 4, 7.
TEST(QwenKernels, DecodeAttentionRopeFromRawQkv) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, pos;
    bool bias, norm;
  };
  for (C c : {C{4, 2, 16, 0, true, false}, C{4, 1, 32, 33, false, true}, C{32, 8, 128, 2000, false, true},
              C{14, 2, 64, 77, true, false}, C{16, 8, 128, 4095, false, true}, C{16, 8, 128, 131, true, true},
              C{8, 8, 64, 5, false, true}}) {
    const int S = 4096, N = (c.H + 2 * c.KV) * c.Dh;
    const size_t cache_n = size_t(c.KV) * S * c.Dh;
    const float eps = 1e-6f;
    auto y = random_f32(rng, N, -3, 3);
    auto bias = random_f32(rng, N, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    auto k0 = random_bf16(rng, cache_n, -2, 2), v0 = random_bf16(rng, cache_n, -1, 1);
    for (int h = 0; h < c.KV; ++h)  // this position's rows: poison, the kernel must write them
      for (int d = 0; d < c.Dh; ++d)
        k0.raw[(size_t(h) * S + c.pos) * c.Dh + d] = v0.raw[(size_t(h) * S + c.pos) * c.Dh + d] = 0x7fc0;
    const std::vector<float> inv = inv_freq_of(c.Dh, 1e6);
    RopeRef want = rope_ref(std::vector<double>(y.begin(), y.end()), c.bias ? bias.data() : nullptr,
                            c.norm ? qn.data() : nullptr, c.norm ? kn.data() : nullptr, inv, c.pos, c.H, c.KV, c.Dh,
                            eps);
    const std::vector<float> want_q(want.q.begin(), want.q.end());
    auto dy = to_device(y), db = to_device(bias), dqn = to_device(qn), dkn = to_device(kn), dinv = to_device(inv),
         dpos = to_device(std::vector<int>{c.pos});
    auto counters = to_device(std::vector<int>(c.H, 0));
    for (int rep = 0; rep < 2; ++rep) {
      auto kc = to_device(k0.raw), vc = to_device(v0.raw);
      auto scratch = poisoned_f32(decode_attention_scratch_floats(c.H, c.Dh));
      auto out = poisoned_bf16(size_t(c.H) * c.Dh);
      QkvRopeArgs r;
      r.bias = c.bias ? db.as<float>() : nullptr;
      r.q_norm = c.norm ? dqn.as<float>() : nullptr;
      r.k_norm = c.norm ? dkn.as<float>() : nullptr;
      r.inv_freq = dinv.as<float>();
      r.H = c.H;
      r.KV = c.KV;
      r.Dh = c.Dh;
      r.S = S;
      r.k_cache = kc.as<bf16>();
      r.v_cache = vc.as<bf16>();
      launch_attention_decode_rope(dy.as<float>(), r, eps, dpos.as<int>(), scratch.as<float>(), counters.as<int>(),
                                   out.as<bf16>(), s.get());
      s.synchronize();
      const std::string what = "H=" + std::to_string(c.H) + " KV=" + std::to_string(c.KV) + " Dh=" +
                               std::to_string(c.Dh) + " pos=" + std::to_string(c.pos) + " launch " + std::to_string(rep);
      Bf16Vec gk, gv;
      gk.f = download_bf16(kc, cache_n);
      gv.f = download_bf16(vc, cache_n);
      EXPECT_LT(rel_err(cache_rows(gk.f, c.KV, S, c.Dh, c.pos), want.k), 4e-3) << "k " << what;
      EXPECT_LT(rel_err(cache_rows(gv.f, c.KV, S, c.Dh, c.pos), want.v), 4e-3) << "v " << what;
      const auto want_o = attention_ref(want_q, gk, gv, 1, c.H, c.KV, c.Dh, S, c.pos);
      EXPECT_LT(rel_err(download_bf16(out, size_t(c.H) * c.Dh), want_o), 4e-3) << "attention " << what;
    }
    EXPECT_EQ(download_ints(counters, c.H), std::vector<int>(c.H, 0));
  }
}

TEST(QwenKernels, DecodeAttentionRopeRefusesBadInput) {
  LG_REQUIRE_GPU();
  int dummy = 0;
  float f = 0.f;
  bf16* b = reinterpret_cast<bf16*>(&dummy);  // never dereferenced: the launcher refuses first
  QkvRopeArgs r;
  r.inv_freq = &f;
  r.H = 4;
  r.KV = 2;
  r.Dh = 48;  // no instance for this head_dim
  r.S = 8;
  r.k_cache = r.v_cache = b;
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.Dh = 64;
  r.KV = 3;  // H not a multiple of KV
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.KV = 2;
  r.inv_freq = nullptr;
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
}

// The decode step's embedding: token and position read from mapped pinned host memory, written
// after the allocation as the lane does before each graph launch; the position lands in device
// memory.
TEST(QwenKernels, EmbedDecodeFromMappedHostMemory) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const int V = 300, D = 1000;
  auto table = random_bf16(rng, size_t(V) * D, -1, 1);
  auto dt = to_device(table.raw);
  int* host = nullptr;
  int* dev = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * sizeof(int), cudaHostAllocMapped), cudaSuccess);
  ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0), cudaSuccess);
  auto dpos = to_device(std::vector<int>{-1});
  std::uniform_int_distribution<int> tok(0, V - 1), pos(0, 1 << 20);
  for (int rep = 0; rep < 3; ++rep) {  // a fresh token each time: nothing cached from the last launch
    host[0] = tok(rng);
    host[1] = pos(rng);
    auto ex = poisoned_f32(D);
    launch_embed_decode(as_bf16(dt), dev, dev + 1, dpos.as<int>(), D, ex.as<float>(), s.get());
    s.synchronize();
    auto gex = download_f32(ex, D);
    for (int k = 0; k < D; ++k) ASSERT_EQ(gex[k], table.f[size_t(host[0]) * D + k]) << rep << "," << k;
    EXPECT_EQ(download_ints(dpos, 1)[0], host[1]);
  }
  cudaFreeHost(host);
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

TEST(QwenKernels, RmsNormRowsSwiGLUEmbed) {
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

}

TEST(QwenKernels, CublasLtGemmWithResidual) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  cuda::LtGemm gemm;
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
