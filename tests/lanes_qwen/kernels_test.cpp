// Each hand-written kernel but the attention's (attention_decode_test.cpp) and the row GEMV's
// (gemv_rows_test.cpp) against a plain CPU loop (double precision) on fresh random inputs,
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
// The KV cache is paged: the kernels that touch it get pools whose sequences' blocks are scattered
// (test_util.h: scattered_pages), every row no sequence holds is NaN, and the references work on
// the sequences' logical rows; a kernel that reads or writes outside its sequence's blocks fails.
// Kernels that hand work between blocks through counters (decode attention, the QKV-RoPE and
// argmax epilogues) are launched twice on fresh poison: the second launch checks that the first
// left its counters at zero. GEMVs also run with a one-block-per-SM grid, where every warp loops
// over many row pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cuda/fill.h"
#include "runtime/cuda/gemm_lt.h"
#include "lanes/qwen/kernels.h"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"
#include "rope_ref.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;

namespace {

const bf16* as_bf16(const cuda::DeviceBuffer& b) { return b.as<bf16>(); }

double silu_ref(double g) { return g / (1.0 + std::exp(-g)); }

/// silu(x W_gate^T) * (x W_up^T) in double for x f32 [T, K] and W [2F, K] whose rows interleave
/// (gate_i, up_i), as the fused gate/up GEMM lays them out: [T, F].
std::vector<double> gate_up_swiglu_ref(const std::vector<float>& x, const std::vector<float>& W, int T, int F, int K) {
  std::vector<double> want(size_t(T) * F);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < F; ++i) {
      double g = 0, u = 0;
      const float* xt = &x[size_t(t) * K];
      const float* wg = &W[size_t(2 * i) * K];
      const float* wu = wg + K;
      for (int k = 0; k < K; ++k) {
        g += double(xt[k]) * wg[k];
        u += double(xt[k]) * wu[k];
      }
      want[size_t(t) * F + i] = silu_ref(g) * u;
    }
  return want;
}

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


// Tokens in shuffled order (each brings its own position and pool row, as a ragged batch's do),
// their K/V rows written where their slots say and nowhere else.
TEST(QwenKernels, RopeQkNormBiasAndKvWrite) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, T, pos0, bs;
    bool bias, norm;
  };
  for (C c : {C{4, 2, 16, 5, 0, 16, true, false}, C{4, 1, 32, 3, 7, 1, false, true},
              C{16, 8, 128, 4, 3000, 16, false, true}, C{8, 8, 64, 40, 100, 32, true, true},
              // The warp form at head_dim 256, and with a last block of fewer than 4 (token, head)s.
              C{4, 2, 256, 3, 50, 16, false, true}, C{3, 1, 64, 3, 17, 16, true, true}}) {
    const int W = (c.H + 2 * c.KV) * c.Dh;
    const float eps = 1e-6f;
    const TestPages pages = scattered_pages(rng, {c.pos0 + c.T}, c.bs, 2);
    std::vector<int> pos(static_cast<size_t>(c.T)), slot(pos.size());
    for (int t = 0; t < c.T; ++t) pos[size_t(t)] = c.pos0 + t;
    std::shuffle(pos.begin(), pos.end(), rng);
    for (int t = 0; t < c.T; ++t) slot[size_t(t)] = pages.row(0, pos[size_t(t)]);
    auto qkv = random_f32(rng, size_t(c.T) * W, -2, 2);
    auto bias = random_f32(rng, W, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    const std::vector<float> inv = inv_freq_of(c.Dh, 1e6);
    auto dqkv = to_device(qkv), db = to_device(bias), dqn = to_device(qn), dkn = to_device(kn), dinv = to_device(inv);
    auto dpos = to_device(pos), dslot = to_device(slot);
    auto q = poisoned_f32(size_t(c.T) * c.H * c.Dh);
    const size_t pool_n = size_t(c.KV) * pages.rows() * c.Dh;
    auto kc = poisoned_bf16(pool_n), vc = poisoned_bf16(pool_n);
    launch_rope_kv(dqkv.as<float>(), c.bias ? db.as<float>() : nullptr, c.norm ? dqn.as<float>() : nullptr,
                   c.norm ? dkn.as<float>() : nullptr, dinv.as<float>(), dpos.as<int>(), dslot.as<int>(), eps, c.T,
                   c.H, c.KV, c.Dh, kv_pages(kc, vc, pages), q.as<float>(), s.get());
    s.synchronize();
    std::vector<double> want_q, want_k, want_v;
    std::vector<float> got_k, got_v;
    auto gq = download_f32(q, size_t(c.T) * c.H * c.Dh);
    auto gk = download_bf16(kc, pool_n), gv = download_bf16(vc, pool_n);
    for (int t = 0; t < c.T; ++t) {
      const std::vector<double> y(qkv.begin() + size_t(t) * W, qkv.begin() + size_t(t + 1) * W);
      RopeRef r = rope_ref(y, c.bias ? bias.data() : nullptr, c.norm ? qn.data() : nullptr,
                           c.norm ? kn.data() : nullptr, inv, pos[size_t(t)], c.H, c.KV, c.Dh, eps);
      want_q.insert(want_q.end(), r.q.begin(), r.q.end());
      want_k.insert(want_k.end(), r.k.begin(), r.k.end());
      want_v.insert(want_v.end(), r.v.begin(), r.v.end());
      auto k_rows = pool_rows(gk, c.KV, pages.rows(), c.Dh, slot[size_t(t)]);
      auto v_rows = pool_rows(gv, c.KV, pages.rows(), c.Dh, slot[size_t(t)]);
      got_k.insert(got_k.end(), k_rows.begin(), k_rows.end());
      got_v.insert(got_v.end(), v_rows.begin(), v_rows.end());
    }
    // q is written [T, H, Dh] in the same order as the loop above.
    EXPECT_LT(rel_err(gq, want_q), 2e-5) << "q Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_k, want_k), 4e-3) << "k cache Dh=" << c.Dh;
    EXPECT_LT(rel_err(got_v, want_v), 4e-3) << "v cache Dh=" << c.Dh;
    // Nothing else of the pool was written.
    size_t written = 0;
    for (size_t i = 0; i < pool_n; ++i) written += !std::isnan(gk[i]) + !std::isnan(gv[i]);
    EXPECT_EQ(written, 2 * size_t(c.T) * c.KV * c.Dh) << "rows written outside the slots, Dh=" << c.Dh;
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

// The final norm of a batched step (each sequence's last row) and the argmax of each row of its
// logits, with planted ties (lowest index wins) and a row of NaN (0, as the GEMV's argmax).
TEST(QwenKernels, RmsNormGatherAndArgmaxRows) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const int T = 9, D = 1000;
  auto x = random_f32(rng, size_t(T) * D, -3, 3);
  auto w = random_f32(rng, D, 0.5f, 1.5f);
  const std::vector<int> rows{8, 0, 3, 3};
  const int B = int(rows.size());
  auto dx = to_device(x), dw = to_device(w), drows = to_device(rows);
  auto h = poisoned_bf16(size_t(B) * D);
  launch_rmsnorm_gather(dx.as<float>(), drows.as<int>(), dw.as<float>(), B, D, 1e-6f, h.as<bf16>(), s.get());
  s.synchronize();
  std::vector<double> want(size_t(B) * D);
  for (int b = 0; b < B; ++b) {
    const float* xr = &x[size_t(rows[size_t(b)]) * D];
    double ss = 0;
    for (int k = 0; k < D; ++k) ss += double(xr[k]) * xr[k];
    const double r = 1.0 / std::sqrt(ss / D + 1e-6);
    for (int k = 0; k < D; ++k) want[size_t(b) * D + k] = xr[k] * r * w[k];
  }
  EXPECT_LT(rel_err(download_bf16(h, want.size()), want), 4e-3);

  const int V = 151936, R = 5;
  auto logits = random_f32(rng, size_t(R) * V, -10, 10);
  std::vector<int> best(R);
  std::uniform_int_distribution<int> pick(0, V - 1);
  for (int b = 0; b < R; ++b) {
    float* row = &logits[size_t(b) * V];
    best[size_t(b)] = int(std::max_element(row, row + V) - row);
  }
  // Row 1: a tie, the lower index must win; row 2: a NaN before the maximum; row 4: all NaN.
  const int a = pick(rng), c = pick(rng);
  logits[size_t(V) + size_t(std::max(a, c))] = logits[size_t(V) + size_t(std::min(a, c))] = 11.f;
  best[1] = a == c ? a : std::min(a, c);
  logits[2 * size_t(V)] = std::nanf("");
  if (best[2] == 0) best[2] = int(std::max_element(&logits[2 * size_t(V) + 1], &logits[3 * size_t(V)]) - &logits[2 * size_t(V)]);
  std::fill(logits.begin() + 4 * size_t(V), logits.end(), std::nanf(""));
  best[4] = 0;
  auto dl = to_device(logits);
  auto idx = to_device(std::vector<int>(R, -1));
  launch_argmax_rows(dl.as<float>(), R, V, idx.as<int>(), s.get());
  s.synchronize();
  EXPECT_EQ(download_ints(idx, R), best);
}

TEST(QwenKernels, RmsNormRowsSwiGLUEmbed) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const int T = 5;
  // Widths for each form of the kernel: the scalar loop (1001: not a multiple of 4) and 1, 2, 4
  // and 8 float4 a thread (1000, 2048, 4096, 5000; 5000 leaves threads without a full last float4).
  for (const int D : {1001, 1000, 2048, 4096, 5000}) {
    auto x = random_f32(rng, size_t(T) * D, -3, 3);
    auto w = random_f32(rng, size_t(D), 0.5f, 1.5f);
    auto dx = to_device(x), dw = to_device(w);
    auto h = poisoned_bf16(size_t(T) * D);
    launch_rmsnorm_rows(dx.as<float>(), dw.as<float>(), T, D, 1e-6f, h.as<bf16>(), s.get());
    s.synchronize();
    std::vector<double> want(size_t(T) * D);
    for (size_t t = 0; t < size_t(T); ++t) {
      double ss = 0;
      for (size_t k = 0; k < size_t(D); ++k) ss += double(x[t * D + k]) * x[t * D + k];
      const double r = 1.0 / std::sqrt(ss / D + 1e-6);
      for (size_t k = 0; k < size_t(D); ++k) want[t * D + k] = x[t * D + k] * r * w[k];
    }
    EXPECT_LT(rel_err(download_bf16(h, want.size()), want), 4e-3) << "D=" << D;

    // The split-K form: x += the sum of the slices, written back, then the same norm of it. Up to
    // 16 slices (the row GEMV's most), four loaded at a time: 6 ends in a partial group. The sum
    // is in slice order, so it is exactly the host's fp32 sum in that order.
    for (const int S : {1, 3, 6, 16}) {
      auto parts = random_f32(rng, size_t(S) * T * D, -2, 2);
      auto dx2 = to_device(x), dp = to_device(parts);
      auto h2 = poisoned_bf16(size_t(T) * D);
      launch_rmsnorm_rows_add(dx2.as<float>(), dp.as<float>(), S, dw.as<float>(), T, D, 1e-6f, h2.as<bf16>(), s.get());
      s.synchronize();
      std::vector<double> sum(size_t(T) * D), want2(size_t(T) * D);
      for (size_t t = 0; t < size_t(T); ++t) {
        double ss = 0;
        for (size_t k = 0; k < size_t(D); ++k) {
          double v = x[t * D + k];
          for (size_t p = 0; p < size_t(S); ++p) v += parts[(p * T + t) * D + k];
          sum[t * D + k] = v;
          ss += v * v;
        }
        const double r = 1.0 / std::sqrt(ss / D + 1e-6);
        for (size_t k = 0; k < size_t(D); ++k) want2[t * D + k] = sum[t * D + k] * r * w[k];
      }
      const std::vector<float> got_x = download_f32(dx2, sum.size());
      EXPECT_LT(rel_err(got_x, sum), 1e-6) << "D=" << D << " S=" << S << ": x";
      size_t inexact = 0;
      for (size_t t = 0; t < size_t(T); ++t)
        for (size_t k = 0; k < size_t(D); ++k) {
          float v = x[t * D + k];
          for (size_t p = 0; p < size_t(S); ++p) v += parts[(p * T + t) * D + k];
          inexact += got_x[t * D + k] != v;
        }
      EXPECT_EQ(inexact, 0u) << "D=" << D << " S=" << S << ": x is not the fp32 sum in slice order";
      EXPECT_LT(rel_err(download_bf16(h2, want2.size()), want2), 4e-3) << "D=" << D << " S=" << S << ": h";
    }
  }
  const int D = 1000;

  for (const size_t n : {size_t{3} * 1001, size_t{4} * 1001}) {  // a pair a thread; four pairs a thread
    auto gu = random_f32(rng, 2 * n, -6, 6);
    auto dgu = to_device(gu);
    auto act = poisoned_bf16(n);
    launch_swiglu(dgu.as<float>(), n, act.as<bf16>(), s.get());
    s.synchronize();
    std::vector<double> want_act(n);
    for (size_t i = 0; i < n; ++i) want_act[i] = silu_ref(gu[2 * i]) * gu[2 * i + 1];
    EXPECT_LT(rel_err(download_bf16(act, n), want_act), 4e-3) << "n " << n;
  }
  // The bf16 product's form (cuBLASLt's bf16 output): four pairs a thread, and the last n % 4
  // pairs one a thread. The reference reads the same bf16 pairs; what is left is act's rounding.
  for (const size_t n : {size_t{4} * 1001, size_t{4} * 1001 + 3, size_t{2}}) {
    const auto gu = random_bf16(rng, 2 * n, -6, 6);
    auto dgu = to_device(gu.raw);
    auto act = poisoned_bf16(n);
    launch_swiglu_bf16(as_bf16(dgu), n, act.as<bf16>(), s.get());
    s.synchronize();
    std::vector<double> want_act(n);
    for (size_t i = 0; i < n; ++i) want_act[i] = silu_ref(gu.f[2 * i]) * gu.f[2 * i + 1];
    EXPECT_LT(rel_err(download_bf16(act, n), want_act), 4e-3) << "bf16 product, n " << n;
  }

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

// A PDL kernel behind a cuBLASLt GEMM in a captured graph (cuda::note_untriggered_launch, unless
// LG_EARLY_AFTER_GEMM=0): its edge moves to the GEMM's launch-completion port, so its blocks start
// while the GEMM runs, and what it computes after its griddepcontrol.wait still sees the whole
// product. The GEMM is large enough (16 x 8192 x 4096, 64 MB of weights: ~20 us) that a read of
// its output before it ends would find the poison; each replay takes fresh inputs. Without the
// knob (LG_EARLY_AFTER_GEMM=0) the edge stays as captured and the result must be the same.
TEST(QwenKernels, PdlKernelBehindCublasLtGemmStartsEarlyAndSeesItsProduct) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  cuda::LtGemm gemm;
  const int T = 16, F = 4096, K = 4096, N = 2 * F;
  auto W = random_bf16(rng, size_t(N) * K, -1, 1);
  auto dW = to_device(W.raw);
  auto din = poisoned_bf16(size_t(T) * K);
  auto gu = poisoned_f32(size_t(T) * N);
  auto act = poisoned_bf16(size_t(T) * F);
  auto enqueue = [&] {
    gemm.matmul(as_bf16(din), as_bf16(dW), gu.as<float>(), T, N, K, false, s.get());
    launch_swiglu(gu.as<float>(), size_t(T) * F, act.as<bf16>(), s.get());
  };
  enqueue();  // cuBLASLt's plan for this shape is made outside the capture
  s.synchronize();
  cuda::GraphExec graph;
  graph.begin_capture(s.get());
  enqueue();
  graph.end_capture(s.get());
  const char* knob = std::getenv("LG_EARLY_AFTER_GEMM");
  const char* pdl = std::getenv("LG_QWEN_PDL");
  const bool on = !(knob && *knob && std::atoi(knob) == 0) && !(pdl && std::atoi(pdl) == 0);
  EXPECT_EQ(graph.early_dependent_edges(), on ? 1u : 0u);
  for (int rep = 0; rep < 3; ++rep) {
    auto in = random_bf16(rng, size_t(T) * K, -1, 1);
    din.upload(in.raw.data(), in.raw.size() * sizeof(uint16_t));
    cuda::memset_device_now(gu.data(), 0xff, size_t(T) * N * sizeof(float));  // NaN
    cuda::memset_device_now(act.data(), 0xff, size_t(T) * F * sizeof(uint16_t));
    graph.launch(s.get());
    s.synchronize();
    const std::vector<double> want = gate_up_swiglu_ref(in.f, W.f, T, F, K);
    // bf16 output: 2^-8 relative rounding, the same bound the eager SwiGLU test holds.
    EXPECT_LT(rel_err(download_bf16(act, want.size()), want), 4e-3) << "replay " << rep;
  }
}

// The batched decode's split-K slices (no GPU needed): the measured picks at the 8B and 0.6B shapes,
// none past 128 rows, and when split, never a slice that is not a multiple of 8 values (16-byte rows).
TEST(QwenKernels, DecodeGemmSlicesAreTheMeasuredPicksAndWholeRows) {
  if (const char* e = std::getenv("LG_QWEN_SPLITK"); e && std::string(e) == "0") GTEST_SKIP() << "LG_QWEN_SPLITK=0";
  EXPECT_EQ(decode_gemm_slices(4096, 16, false), 4);   // 8B o_proj
  EXPECT_EQ(decode_gemm_slices(12288, 16, true), 3);   // 8B down
  EXPECT_EQ(decode_gemm_slices(4096, 64, false), 4);
  EXPECT_EQ(decode_gemm_slices(12288, 128, true), 2);
  EXPECT_EQ(decode_gemm_slices(4096, 256, false), 1);  // not measured past 128 rows
  EXPECT_EQ(decode_gemm_slices(2048, 16, false), 4);   // 0.6B o_proj
  EXPECT_EQ(decode_gemm_slices(3072, 16, true), 3);    // 0.6B down
  EXPECT_EQ(decode_gemm_slices(96, 16, false), 4);     // slices of 24
  EXPECT_EQ(decode_gemm_slices(64, 16, true), 2);      // 3 does not divide 64; slices of 32
  EXPECT_EQ(decode_gemm_slices(100, 16, false), 1);    // no split gives multiples of 8
  EXPECT_EQ(decode_gemm_slices(40, 16, false), 1);
  for (int K : {8, 24, 64, 96, 100, 192, 768, 3072, 4096, 12288})
    for (int Bp : {2, 16, 64, 128, 256})
      for (bool down : {false, true}) {
        const int S = decode_gemm_slices(K, Bp, down);
        EXPECT_TRUE(S == 1 || (S <= kMaxDecodeSlices && K % S == 0 && (K / S) % 8 == 0)) << K << " " << Bp << " " << S;
      }
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
    // The bf16 output: the same product rounded once more (unit roundoff 2^-9 an element).
    auto out16 = poisoned_bf16(y.size());
    gemm.matmul_bf16(as_bf16(din), as_bf16(dW), out16.as<__nv_bfloat16>(), c.T, c.N, c.K, s.get());
    s.synchronize();
    for (size_t i = 0; i < y.size(); ++i) y[i] -= resid[i];
    EXPECT_LT(rel_err(download_bf16(out16, y.size()), y), 4e-3) << "bf16 output " << c.T << "x" << c.N << "x" << c.K;
  }
  // Split-K slices (the batched decode's o_proj and down): each slice is its own product over K/S.
  for (C c : {C{16, 192, 768}, C{37, 640, 1024}}) {
    auto in = random_bf16(rng, size_t(c.T) * c.K, -1, 1), W = random_bf16(rng, size_t(c.N) * c.K, -1, 1);
    auto din = to_device(in.raw), dW = to_device(W.raw);
    for (const int S : {2, 3, 4}) {
      if (c.K % S != 0 || (c.K / S) % 8 != 0) continue;
      const int ks = c.K / S;
      std::vector<double> want(size_t(S) * c.T * c.N);
      for (int p = 0; p < S; ++p)
        for (int t = 0; t < c.T; ++t)
          for (int n = 0; n < c.N; ++n) {
            double acc = 0;
            for (int k = p * ks; k < (p + 1) * ks; ++k) acc += double(in.f[size_t(t) * c.K + k]) * W.f[size_t(n) * c.K + k];
            want[(size_t(p) * c.T + t) * c.N + n] = acc;
          }
      auto parts = poisoned_f32(want.size());
      gemm.matmul_split(as_bf16(din), as_bf16(dW), parts.as<float>(), c.T, c.N, c.K, S, s.get());
      s.synchronize();
      EXPECT_LT(rel_err(download_f32(parts, want.size()), want), 2e-5) << "S=" << S << " " << c.T << "x" << c.N << "x" << c.K;
    }
  }
  EXPECT_THROW(gemm.matmul_split(nullptr, nullptr, nullptr, 16, 64, 100, 3, s.get()), Error);  // 3 does not divide 100
  EXPECT_THROW(gemm.matmul_split(nullptr, nullptr, nullptr, 16, 64, 36, 3, s.get()), Error);   // slices of 12
}
