// Tests of the tensor-core prefill attention template (src/kernels/flash_attention.cuh): through the
// hand-written lane's launcher (its paged policy: one sequence's K/V in scattered blocks of a pool
// whose other rows are NaN) against a double-precision CPU loop on fresh random inputs, and its
// text compiled by NVRTC (no GPU needed) the way the compiled lane will compile it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "emit/cuda/nvrtc.h"
#include "lanes/qwen/prefill_attention.h"
#include "support/error.h"
#include "test_util.h"

namespace lg::qwen::test {
namespace {

std::string read_header() {
  const std::string path = source_dir() + "/src/kernels/flash_attention.cuh";
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The compiled lane pastes the header's text into source that NVRTC compiles without include paths,
// so the text must stand alone.
TEST(FlashAttentionNvrtc, HeaderIsSelfContained) {
  const std::string text = read_header();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find("#include"), std::string::npos);
  EXPECT_EQ(text.find("std::"), std::string::npos);
  EXPECT_EQ(text.find("__nv_bfloat16"), std::string::npos);
}

TEST(FlashAttentionNvrtc, CompilesForSm90WithATrivialPolicy) {
  // A policy of the shape the compiled lane writes: plain bf16 bit arrays, f32 output.
  const std::string policy = R"(
struct TrivialPolicy {
  const unsigned short *q, *k, *v; float* out; int pos0, H, S, DH;
  __device__ uint4 load_q8(int t, int h, int d0) const { return *(const uint4*)(q + ((long)t * H + h) * DH + d0); }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return *(const uint4*)(k + ((long)kvh * S + j) * DH + d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return *(const uint4*)(v + ((long)kvh * S + j) * DH + d0); }
  __device__ int pos(int t) const { return pos0 + t; }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const {
    float* o = out + ((long)t * H + h) * DH + d; o[0] = o0; o[1] = o1;
  }
};
#define LG_FA_TEST_KERNEL(N)                                                                              \
  extern "C" __global__ void __launch_bounds__(lg_fa::kThreads) fa_##N(                                   \
      const unsigned short* q, const unsigned short* k, const unsigned short* v, float* out, int pos0, int T, \
      int H, int group, int S, float scale) {                                                            \
    __shared__ lg_fa::Smem<N> sm;                                                                        \
    const TrivialPolicy p{q, k, v, out, pos0, H, S, N};                                                  \
    int tile, h;                                                                                         \
    lg_fa::schedule(blockIdx.x, T, H, tile, h);                                                          \
    lg_fa::attention_block<N>(p, tile, h, T, group, scale, sm);                                          \
  }
LG_FA_TEST_KERNEL(16)
LG_FA_TEST_KERNEL(32)
LG_FA_TEST_KERNEL(64)
LG_FA_TEST_KERNEL(128)
)";
  std::vector<char> cubin;
  ASSERT_NO_THROW(cubin = emit::cuda::nvrtc_compile(read_header() + policy, "flash_attention_nvrtc_test", "sm_90"));
  EXPECT_GT(cubin.size(), 1000u);
}

/// Double-precision causal GQA attention with the kernel's inputs: qb is q rounded to bf16 (the
/// kernel's documented operand precision), k and v bf16 values [KV, S, Dh]. Returns O [T, H, Dh] and
/// A = sum_j p_j |v_j| / sum_j p_j per element (the scale of the P-rounding error, see below).
void attention_ref(const std::vector<float>& qb, const std::vector<float>& k, const std::vector<float>& v, int T,
                   int H, int KV, int Dh, int S, int pos0, std::vector<double>& o, std::vector<double>& a) {
  o.assign(static_cast<size_t>(T) * H * Dh, 0.0);
  a.assign(o.size(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  std::vector<double> s;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const int kvh = h / (H / KV), n = pos0 + t + 1;
      const float* qr = &qb[(static_cast<size_t>(t) * H + h) * Dh];
      s.assign(static_cast<size_t>(n), 0.0);
      double mx = -INFINITY;
      for (int j = 0; j < n; ++j) {
        const float* kr = &k[(static_cast<size_t>(kvh) * S + j) * Dh];
        double acc = 0;
        for (int d = 0; d < Dh; ++d) acc += static_cast<double>(qr[d]) * kr[d];
        s[static_cast<size_t>(j)] = acc * scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      double l = 0;
      for (auto& x : s) l += (x = std::exp(x - mx));
      double* orow = &o[(static_cast<size_t>(t) * H + h) * Dh];
      double* arow = &a[(static_cast<size_t>(t) * H + h) * Dh];
      for (int j = 0; j < n; ++j) {
        const float* vr = &v[(static_cast<size_t>(kvh) * S + j) * Dh];
        const double w = s[static_cast<size_t>(j)] / l;
        for (int d = 0; d < Dh; ++d) {
          orow[d] += w * vr[d];
          arow[d] += w * std::fabs(vr[d]);
        }
      }
    }
}

struct Case {
  int T, pos0, bs;
};

// Tolerance, per element, from what the kernel rounds (reference: exact math on the same bf16 q, k, v):
//  - P = exp(s - m) is rounded to bf16 (unit roundoff u = 2^-8) before the P V mma, while the row
//    sum l keeps fp32 P. So O~ - O = sum_j p_j d_j v_j / l with |d_j| <= u, hence
//    |O~ - O| <= u * A, A = sum_j p_j |v_j| / l (bounded by max |v|, not by |O|, which can cancel).
//  - the fp32 parts (mma accumulation of the scores, which on tensor cores is not IEEE
//    round-to-nearest; ex2.approx, relative 2^-22; the rescaling by exp2(m_old - m_new) over at most
//    S / 64 tiles) move each p_j by well under 2^-10 relative: bounded by 2^-10 * A.
//  - the output is rounded to bf16: u * (|O| + the error above).
// Bound: u |O| + (u + 2^-10) (1 + u) A. An element that is NaN (never written: outputs are poisoned),
// a wrong mask (a missing or extra key moves O by p_j / l |v_j - O|, which on the first rows, with
// few keys and scores of spread ~1.3, is far above 5e-3 A) or a wrong head fails it.
constexpr double kU = 1.0 / 256, kFp32Slack = 1.0 / 1024;

void check_case(int Dh, int group, const Case& c, std::mt19937_64& rng) {
  const int KV = 2, H = KV * group, T = c.T, pos0 = c.pos0;
  // The sequence's logical rows [KV, S, Dh]; rows past the last position hold NaN, and so does
  // every pool row outside its blocks: the kernel must not read them into P V.
  const int S = pos0 + T + 9;
  SCOPED_TRACE("Dh=" + std::to_string(Dh) + " H=" + std::to_string(H) + " KV=" + std::to_string(KV) +
               " T=" + std::to_string(T) + " pos0=" + std::to_string(pos0) + " bs=" + std::to_string(c.bs));
  // q in (-4, 4), k in (-1, 1): scaled scores have a spread of about 4/3, so softmax rows are
  // neither flat nor one-hot.
  auto q = random_f32(rng, static_cast<size_t>(T) * H * Dh, -4.f, 4.f);
  auto k = random_bf16(rng, static_cast<size_t>(KV) * S * Dh, -1.f, 1.f);
  auto v = random_bf16(rng, static_cast<size_t>(KV) * S * Dh, -1.f, 1.f);
  for (int kvh = 0; kvh < KV; ++kvh)
    for (int j = pos0 + T; j < S; ++j)
      for (int d = 0; d < Dh; ++d) {
        const size_t i = (static_cast<size_t>(kvh) * S + j) * Dh + static_cast<size_t>(d);
        k.raw[i] = v.raw[i] = 0x7fc0;
        k.f[i] = v.f[i] = std::nanf("");
      }
  std::vector<float> qb(q.size());
  for (size_t i = 0; i < q.size(); ++i) qb[i] = round_bf16(q[i]);

  const TestPages pages = scattered_pages(rng, {S}, c.bs, 2);
  std::vector<int> pos(static_cast<size_t>(T));
  for (int t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = pos0 + t;
  auto dq = to_device(q), dk = to_device(scatter_to_pool(pages, {&k}, {S}, KV, Dh)),
       dv = to_device(scatter_to_pool(pages, {&v}, {S}, KV, Dh)), dpos = to_device(pos),
       dbt = to_device(pages.tables[0]);
  const size_t n_out = static_cast<size_t>(T) * H * Dh;
  auto dout = poisoned_bf16(n_out);
  KvPages cache;
  cache.k = dk.as<__nv_bfloat16>();
  cache.v = dv.as<__nv_bfloat16>();
  cache.rows = pages.rows();
  cache.block_size = pages.bs;
  launch_attention_prefill_tc(dq.as<float>(), cache, dbt.as<int>(), dpos.as<int>(), T, H, KV, Dh,
                              dout.as<__nv_bfloat16>(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = download_bf16(dout, n_out);

  std::vector<double> want, a;
  attention_ref(qb, k.f, v.f, T, H, KV, Dh, S, pos0, want, a);
  double worst = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < n_out; ++i) {
    const double bound = kU * std::fabs(want[i]) + (kU + kFp32Slack) * (1 + kU) * a[i];
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= bound)) {  // NaN fails too
      if (bad++ == 0) first_bad = i;
    } else {
      worst = std::max(worst, err / bound);
    }
  }
  const double rel = rel_err(got, want);
  EXPECT_EQ(bad, 0u) << "first at (t, h, d) = (" << first_bad / (H * Dh) << ", " << first_bad / Dh % H << ", "
                     << first_bad % Dh << "): got " << got[first_bad] << " want " << want[first_bad] << " A "
                     << a[first_bad];
  // Norm-wise: the bf16 operand range METHOD.md quotes (1e-3 .. 1e-2); rounding alone lands near 3e-3.
  EXPECT_LT(rel, 1e-2);
  // Printed so a GPU log shows the headroom of every case.
  std::printf("flash Dh=%3d H=%2d KV=%d T=%3d pos0=%3d  rel_err %.2e  max err/bound %.2f\n", Dh, H, KV, T, pos0, rel,
              worst);
}

void check_head_dim(int Dh) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  // T not a multiple of 64; several query and key tiles; a second chunk (pos0 > 0, not a multiple
  // of 64) attending to cached keys; a single token at 0 and deep in the cache.
  // Block sizes 16 (the lane's default), 1, 8 and 128 (a block wider than a key tile).
  const Case cases[] = {{100, 0, 16}, {37, 70, 8}, {300, 129, 16}, {1, 0, 16}, {1, 200, 1}, {64, 64, 128}};
  for (int group : {1, 2, 4, 8})
    for (const Case& c : cases) check_case(Dh, group, c, rng);
}

TEST(FlashAttentionGpu, HeadDim16) { check_head_dim(16); }
TEST(FlashAttentionGpu, HeadDim32) { check_head_dim(32); }
TEST(FlashAttentionGpu, HeadDim64) { check_head_dim(64); }
TEST(FlashAttentionGpu, HeadDim128) { check_head_dim(128); }

TEST(FlashAttentionLaunch, RejectsBadShapes) {
  // Checked before anything touches the device, so no GPU is needed.
  KvPages c;
  c.rows = 64;
  c.block_size = 16;
  EXPECT_THROW(launch_attention_prefill_tc(nullptr, c, nullptr, nullptr, 4, 8, 8, 96, nullptr, nullptr), Error);
  EXPECT_THROW(launch_attention_prefill_tc(nullptr, c, nullptr, nullptr, 4, 6, 4, 64, nullptr, nullptr), Error);
  EXPECT_THROW(launch_attention_prefill_tc(nullptr, c, nullptr, nullptr, 4, 8, 2, 64, nullptr, nullptr), Error);
  c.block_size = 24;  // not a power of two
  c.rows = 48;
  EXPECT_THROW(launch_attention_prefill_tc(nullptr, c, nullptr, nullptr, 0, 8, 2, 64, nullptr, nullptr), Error);
  c.block_size = 16;
  c.rows = 64;
  EXPECT_NO_THROW(launch_attention_prefill_tc(nullptr, c, nullptr, nullptr, 0, 8, 2, 64, nullptr, nullptr));
}

}  // namespace
}  // namespace lg::qwen::test
