// The tensor-core GEMV of a few rows (launch_gemv_rows: kernels/gemv_rows.cuh and its TMA form,
// kernels/gemv_rows_tma.cuh) against a CPU loop in double on fresh random inputs (GPU; skipped
// without one, except the refusals, which throw before touching the device). A file of its own:
// kernels_test.cpp is past the size where the guide splits. Inputs are rounded to bf16 on the
// host, so the reference sees exactly what the device sees, and the bounds only cover the
// device's fp32 accumulation:
//   fp32 outputs: norm-wise relative error < 5e-5. Each output is K/16 mma accumulations of 16
//     exact bf16 x bf16 products plus, split-K, up to 16 fp32 additions of the splits' sums. Tensor
//     cores align the addends to the largest exponent and truncate (Fasi et al., "Numerical
//     behavior of NVIDIA tensor cores", PeerJ CS 2021), so take a unit roundoff of 2^-23 per
//     addition rather than 2^-24; with random-sign data the errors are independent and grow as
//     sqrt(n): sqrt(12288/16 + 64) * 1.2e-7 = 3.5e-6 at the largest K here. 5e-5 is that times
//     about 14, and still 20 times below what one wrong weight row in 16 does to a tile.
//   bf16 outputs (SwiGLU): < 4e-3, kernels_test.cpp's bound for one final bf16 rounding (2^-9,
//     doubled for values next to a rounding boundary).
// Every launch writes into outputs poisoned with NaN (store, SwiGLU) or holding a known residual,
// with one more row after the T rows holding a sentinel that must survive: a write to a row
// t >= T (the padded MMA columns) fails. Each case runs in both forms, each on its default grid
// and on one where every warp loops over many items (kGrids), and kResidual also with forced
// split counts; after each, the split arrival counters must be back at zero. The split sums are
// in split order, so a kResidual launch gives the same bits on any grid and run (checked).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "runtime/cuda/device.h"
#include "support/error.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;

namespace {

constexpr double kF32Tol = 5e-5;
constexpr double kBf16Tol = 4e-3;
constexpr float kSentinel = 12345.f;

double silu_of(double g) { return g / (1.0 + std::exp(-g)); }

struct Case {
  int N, K;
  std::vector<int> Ts;
};

/// W [N, K], x [T, K] (bf16-rounded), and y [T, N] in double.
struct Problem {
  int N, K, T;
  Bf16Vec W, x;
  std::vector<double> y;
};

Problem make_problem(std::mt19937_64& rng, int N, int K, int T) {
  Problem p{N, K, T, random_bf16(rng, size_t(N) * K, -1, 1), random_bf16(rng, size_t(T) * K, -1, 1), {}};
  p.y.assign(size_t(T) * N, 0.0);
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      const float* w = p.W.f.data() + size_t(n) * K;
      const float* xv = p.x.f.data() + size_t(t) * K;
      double acc = 0;
      for (int k = 0; k < K; ++k) acc += double(w[k]) * xv[k];
      p.y[size_t(t) * N + n] = acc;
    }
  return p;
}

/// A form and grid to launch with: each form on its default grid and on a grid small enough that
/// every block loops over many items (the register form at one block an SM, the TMA form at 7
/// blocks: its producer's ring then runs across items), the TMA form with 4 and 8 consumer warps.
struct Grid {
  GemvRowsForm form;
  int blocks_per_sm, max_blocks, consumer_warps = 0;
};
const Grid kGrids[] = {{GemvRowsForm::kRegisters, 0, 0},    {GemvRowsForm::kRegisters, 1, 0},
                       {GemvRowsForm::kTma, 0, 0, 4},       {GemvRowsForm::kTma, 0, 7, 4},
                       {GemvRowsForm::kTma, 0, 0, 8},       {GemvRowsForm::kTma, 0, 7, 8}};

void set_grid(GemvRowsArgs& a, const Grid& g) {
  a.form = g.form;
  a.blocks_per_sm = g.blocks_per_sm;
  a.max_blocks = g.max_blocks;
  a.consumer_warps = g.consumer_warps;
}

std::string label(const Problem& p, const char* what, const Grid& g, int splits) {
  return std::string(what) + (g.form == GemvRowsForm::kTma ? " tma" : " registers") + " N=" + std::to_string(p.N) +
         " K=" + std::to_string(p.K) + " T=" + std::to_string(p.T) + " bps=" + std::to_string(g.blocks_per_sm) +
         " max_blocks=" + std::to_string(g.max_blocks) + " warps=" + std::to_string(g.consumer_warps) +
         " splits=" + std::to_string(splits);
}

/// T rows of `rows` floats, NaN (or `init` if given), then one sentinel row.
cuda::DeviceBuffer f32_out(int T, int rows_len, const std::vector<float>* init) {
  std::vector<float> v(size_t(T + 1) * rows_len, std::nanf(""));
  if (init) std::copy(init->begin(), init->end(), v.begin());
  std::fill(v.begin() + size_t(T) * rows_len, v.end(), kSentinel);
  return to_device(v);
}

/// The first T rows; EXPECTs the sentinel row intact.
std::vector<float> f32_rows(const cuda::DeviceBuffer& b, int T, int rows_len, const std::string& what) {
  std::vector<float> all = download_f32(b, size_t(T + 1) * rows_len);
  int bad = 0;
  for (size_t i = size_t(T) * rows_len; i < all.size(); ++i) bad += all[i] != kSentinel;
  EXPECT_EQ(bad, 0) << what << ": wrote past row T";
  all.resize(size_t(T) * rows_len);
  return all;
}

/// Room for any split count of problem p's kResidual and kSlices launches: partials poisoned with
/// NaN (each split writes its own before anything reads it) and zeroed arrival counters.
struct SplitScratch {
  cuda::DeviceBuffer partials, arrivals;
  SplitScratch(const Problem& p)
      : partials(to_device(std::vector<float>(gemv_rows_partials_floats(p.T, p.N), std::nanf("")))),
        arrivals(to_device(std::vector<int>(gemv_rows_arrival_ints(p.N), 0))) {}
  void give(GemvRowsArgs& a) const {
    a.partials = partials.as<float>();
    a.partials_n = partials.bytes() / sizeof(float);
    a.arrivals = arrivals.as<int>();
    a.arrivals_n = arrivals.bytes() / sizeof(int);
  }
  /// EXPECTs every counter back at zero (the next launch's splits count from there).
  void expect_counters_zero(const std::string& what) const {
    const std::vector<int> c = download_ints(arrivals, arrivals.bytes() / sizeof(int));
    int left = 0;
    for (int v : c) left += v != 0;
    EXPECT_EQ(left, 0) << what << ": split arrival counters left non-zero";
  }
};

/// The launch's inputs for problem p with W and x on the device (no output yet).
GemvRowsArgs args_of(const Problem& p, const cuda::DeviceBuffer& dW, const cuda::DeviceBuffer& dx) {
  GemvRowsArgs a;
  a.W = dW.as<bf16>();
  a.N = p.N;
  a.K = p.K;
  a.T = p.T;
  a.x = dx.as<bf16>();
  return a;
}

void check_store_and_residual(std::mt19937_64& rng, const Problem& p, const cuda::Stream& s) {
  auto dW = to_device(p.W.raw), dx = to_device(p.x.raw);
  GemvRowsArgs a = args_of(p, dW, dx);
  SplitScratch scratch(p);
  scratch.give(a);
  for (const Grid& g : kGrids) {
    if (p.T > gemv_rows_max_t(g.form)) continue;
    auto out = f32_out(p.T, p.N, nullptr);
    set_grid(a, g);
    a.splits = 0;
    a.out_f32 = out.as<float>();
    launch_gemv_rows(GemvRowsOutput::kStore, a, s.get());
    s.synchronize();
    const std::string what = label(p, "store", g, 1);
    EXPECT_LT(rel_err(f32_rows(out, p.T, p.N, what), p.y), kF32Tol) << what;
  }
  const std::vector<float> resid = random_f32(rng, size_t(p.T) * p.N, -4, 4);
  std::vector<double> want(resid.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = resid[i] + p.y[i];
  for (const Grid& g : kGrids)
    for (int splits : {0, 1, 3}) {
      if (p.T > gemv_rows_max_t(g.form)) continue;
      auto out = f32_out(p.T, p.N, &resid);
      set_grid(a, g);
      a.splits = splits;
      a.out_f32 = out.as<float>();
      launch_gemv_rows(GemvRowsOutput::kResidual, a, s.get());
      s.synchronize();
      const std::string what = label(p, "residual", g, splits);
      EXPECT_LT(rel_err(f32_rows(out, p.T, p.N, what), want), kF32Tol) << what;
      scratch.expect_counters_zero(what);
    }
  // kSlices: the splits' sums in slices of the partials (poisoned first), added here in double.
  for (const Grid& g : kGrids)
    for (int splits : {0, 1, 3}) {
      if (p.T > gemv_rows_max_t(g.form)) continue;
      const std::vector<float> nan(scratch.partials.bytes() / sizeof(float), std::nanf(""));
      scratch.partials.upload(nan.data(), scratch.partials.bytes());
      set_grid(a, g);
      a.splits = splits;
      a.out_f32 = nullptr;
      const int ran = launch_gemv_rows(GemvRowsOutput::kSlices, a, s.get());
      s.synchronize();
      const std::string what = label(p, "slices", g, splits) + " ran " + std::to_string(ran);
      // A forced count is a most: whole chunks of k a split, none empty (K = 8 takes one).
      if (splits > 0) {
        EXPECT_LE(ran, splits) << what;
      }
      ASSERT_GE(ran, 1) << what;
      ASSERT_LE(ran, kGemvRowsMaxSplits) << what;
      const size_t slice = size_t(p.T) * p.N;
      const int held = std::min(ran + 1, kGemvRowsMaxSplits);  // the slices the scratch holds
      const std::vector<float> parts = download_f32(scratch.partials, size_t(held) * slice);
      size_t past = 0;  // the slice after the last it reports (if any): still poisoned
      for (size_t i = size_t(ran) * slice; i < parts.size(); ++i) past += !std::isnan(parts[i]);
      EXPECT_EQ(past, 0u) << what << ": wrote more slices than it reports";
      std::vector<float> sum(slice, 0.f);
      for (size_t i = 0; i < slice; ++i) {
        double v = 0;
        for (int sp = 0; sp < ran; ++sp) v += parts[sp * slice + i];
        sum[i] = static_cast<float>(v);
      }
      EXPECT_LT(rel_err(sum, p.y), kF32Tol) << what;
    }
}

void check_swiglu(const Problem& p, const cuda::Stream& s) {
  auto dW = to_device(p.W.raw), dx = to_device(p.x.raw);
  const int half = p.N / 2;
  std::vector<double> want(size_t(p.T) * half);
  for (int t = 0; t < p.T; ++t)
    for (int i = 0; i < half; ++i)
      want[size_t(t) * half + i] = silu_of(p.y[size_t(t) * p.N + 2 * i]) * p.y[size_t(t) * p.N + 2 * i + 1];
  GemvRowsArgs a = args_of(p, dW, dx);
  for (const Grid& g : kGrids) {
    if (p.T > gemv_rows_max_t(g.form)) continue;
    // T rows of NaN, then a sentinel row (bf16 0x4248 = 50.0).
    std::vector<uint16_t> init(size_t(p.T + 1) * half, 0x7fc0);
    std::fill(init.begin() + size_t(p.T) * half, init.end(), uint16_t{0x4248});
    auto out = to_device(init);
    set_grid(a, g);
    a.out_bf16 = out.as<bf16>();
    launch_gemv_rows(GemvRowsOutput::kSwiGLU, a, s.get());
    s.synchronize();
    std::vector<float> got = download_bf16(out, init.size());
    const std::string what = label(p, "swiglu", g, 1);
    int bad = 0;
    for (size_t i = size_t(p.T) * half; i < got.size(); ++i) bad += got[i] != 50.f;
    EXPECT_EQ(bad, 0) << what << ": wrote past row T";
    got.resize(want.size());
    EXPECT_LT(rel_err(got, want), kBf16Tol) << what;
  }
}

}  // namespace

// Small shapes (one tile; K not a multiple of 32: a step's last chunks are past K; many splits of
// few chunks; T past 16 in the TMA form only) and the Qwen3-8B decode shapes: QKV 6144 x 4096, o_proj 4096 x 4096, down 4096 x 12288.
TEST(QwenGemvRows, StoreAndResidualAgainstDouble) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const std::vector<Case> cases = {
      {16, 8, {1, 2, 16}},       {48, 72, {3, 8, 9, 32}},     {256, 64, {2, 5, 13}},
      {384, 1000, {7, 16, 20}},  {1024, 3072, {4, 11}},       {4096, 4096, {2, 16, 32}},
      {6144, 4096, {9}},         {4096, 12288, {16, 3, 25}},
  };
  for (const Case& c : cases)
    for (int T : c.Ts) check_store_and_residual(rng, make_problem(rng, c.N, c.K, T), s);
}

// Rows interleaved (gate_i, up_i) as the lane uploads them; the 8B gate/up is 24576 x 4096.
TEST(QwenGemvRows, SwiGLUAgainstDouble) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const std::vector<Case> cases = {{16, 8, {1, 2}}, {384, 64, {3, 9, 16, 31}}, {6144, 1024, {5, 12}}, {24576, 4096, {16, 7, 32}}};
  for (const Case& c : cases)
    for (int T : c.Ts) check_swiglu(make_problem(rng, c.N, c.K, T), s);
}

// `clear`: a launch zero-fills a buffer after its wait, and a kResidual launch into it is a store
// (the batched decode's QKV projection, cleared by the layer before). Launched twice a form, so the
// second clear runs over the first's results.
TEST(QwenGemvRows, ClearThenAccumulateIsAStore) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  const Problem p = make_problem(rng, 512, 2048, 6);
  const Problem other = make_problem(rng, 256, 512, 6);
  auto dW = to_device(p.W.raw), dx = to_device(p.x.raw), oW = to_device(other.W.raw), ox = to_device(other.x.raw);
  const std::vector<float> junk = random_f32(rng, size_t(p.T) * p.N, -4, 4);
  auto target = f32_out(p.T, p.N, &junk);
  const SplitScratch scratch(p);
  for (int round = 0; round < 4; ++round) {
    const GemvRowsForm form = round < 2 ? GemvRowsForm::kRegisters : GemvRowsForm::kTma;
    auto side = f32_out(other.T, other.N, nullptr);
    GemvRowsArgs c = args_of(other, oW, ox);  // another projection, clearing the target as it goes
    c.out_f32 = side.as<float>();
    c.clear = target.as<float>();
    c.clear_n = size_t(p.T) * p.N;
    c.form = form;
    launch_gemv_rows(GemvRowsOutput::kStore, c, s.get());
    GemvRowsArgs a = args_of(p, dW, dx);
    scratch.give(a);
    a.out_f32 = target.as<float>();
    a.form = form;
    launch_gemv_rows(GemvRowsOutput::kResidual, a, s.get());
    s.synchronize();
    const std::string what = "round " + std::to_string(round);
    EXPECT_LT(rel_err(f32_rows(side, other.T, other.N, what + " side"), other.y), kF32Tol) << what;
    EXPECT_LT(rel_err(f32_rows(target, p.T, p.N, what + " cleared"), p.y), kF32Tol) << what;
  }
}

// The splits of a kResidual launch are summed in split order, so its result is the same bits
// whatever the grid (which block runs which split, in which order they finish) and from run to
// run: what lets two runs of one seeded sampled request agree (RowDraws' tests, which failed under
// the atomic adds this replaced: bench/RESULTS.md, thirty-third session). Under
// LG_QWEN_ROWS_ATOMIC_SPLITS=1 (those adds, for A/B) it fails, as it must: 5,870 outputs differed
// between grids on an H100 (thirty-fifth session, call 1). The 8B o_proj and down
// shapes at 16 and 32 rows, 2 to 16 splits, each form (the TMA one with 4 and 8 consumer warps)
// on three grids, each launched twice.
TEST(QwenGemvRows, SplitSumsAreTheSameBitsOnAnyGrid) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct Shape {
    int N, K, T;
  };
  for (const Shape sh : {Shape{4096, 4096, 16}, Shape{4096, 12288, 32}, Shape{1024, 2048, 9}}) {
    const Problem p = make_problem(rng, sh.N, sh.K, sh.T);
    auto dW = to_device(p.W.raw), dx = to_device(p.x.raw);
    const SplitScratch scratch(p);
    const std::vector<float> resid = random_f32(rng, size_t(p.T) * p.N, -4, 4);
    for (GemvRowsForm form : {GemvRowsForm::kRegisters, GemvRowsForm::kTma}) {
      if (p.T > gemv_rows_max_t(form)) continue;
      for (int splits : {2, 5, 16})
        for (int warps : form == GemvRowsForm::kTma ? std::vector<int>{4, 8} : std::vector<int>{0}) {
          // 8 consumer warps sum a stage's two k-halves apart: other bits than 4, the same each time.
          std::vector<float> first;
          std::string first_what;
          for (int max_blocks : {0, 7, 1})
            for (int run = 0; run < 2; ++run) {
              GemvRowsArgs a = args_of(p, dW, dx);
              scratch.give(a);
              a.form = form;
              a.splits = splits;
              a.consumer_warps = warps;
              if (form == GemvRowsForm::kTma) a.max_blocks = max_blocks;
              else a.blocks_per_sm = max_blocks == 0 ? 0 : 1;
              auto out = f32_out(p.T, p.N, &resid);
              a.out_f32 = out.as<float>();
              launch_gemv_rows(GemvRowsOutput::kResidual, a, s.get());
              s.synchronize();
              const std::string what =
                  label(p, "residual", Grid{form, a.blocks_per_sm, a.max_blocks, warps}, splits) + " run " +
                  std::to_string(run);
              std::vector<float> got = f32_rows(out, p.T, p.N, what);
              scratch.expect_counters_zero(what);
              if (first.empty()) {
                first = got;
                first_what = what;
                continue;
              }
              size_t differ = 0;
              for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &first[i], sizeof(float)) != 0;
              EXPECT_EQ(differ, 0u) << what << " against " << first_what << ": outputs not bit-identical";
            }
        }
    }
  }
}

// Every refusal throws before any device call, so this runs without a GPU too.
TEST(QwenGemvRows, RefusesBadArguments) {
  alignas(16) static uint16_t w[64 * 64];
  alignas(16) static uint16_t x[17 * 64];
  alignas(16) static float out[17 * 64];
  GemvRowsArgs a;
  a.W = reinterpret_cast<const bf16*>(w);
  a.x = reinterpret_cast<const bf16*>(x);
  a.out_f32 = out;
  a.N = 64;
  a.K = 64;
  a.T = 4;
  // The launcher's own refusal, naming the launch: without a GPU any launch throws too (a CUDA
  // error), which must not pass for a refusal.
  int checked = 0;
  auto refused = [&](GemvRowsArgs b, GemvRowsOutput o = GemvRowsOutput::kStore) {
    ++checked;
    try {
      launch_gemv_rows(o, b, nullptr);
      ADD_FAILURE() << "refusal " << checked << ": launched";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("hand-written row GEMV") != std::string::npos && m.find("CUDA") == std::string::npos &&
                  m.find("cuTensorMap") == std::string::npos)
          << "refusal " << checked << ": " << m;
    }
  };
  GemvRowsArgs b = a;
  b.N = 24;  // not a multiple of 16
  refused(b);
  b = a;
  b.K = 12;  // not a multiple of 8
  refused(b);
  b = a;
  b.T = 0;
  refused(b);
  b.T = kGemvRowsMaxT + 1;
  refused(b);
  b.T = kGemvRowsRegistersMaxT + 1;  // past the register form's rows
  b.form = GemvRowsForm::kRegisters;
  refused(b);
  b.form = GemvRowsForm::kDefault;
  b = a;
  b.x = nullptr;
  refused(b);
  b = a;
  refused(b, GemvRowsOutput::kSwiGLU);  // no out_bf16
  b = a;
  b.out_f32 = out + 1;  // misaligned
  refused(b);
  b = a;
  b.clear = out;  // its own output
  b.clear_n = 64;
  refused(b);
  b.clear = out + 4 * 64;
  b.clear_n = 6;  // not a multiple of 4
  refused(b);
  b = a;
  b.blocks_per_sm = 5;
  refused(b);
  b = a;
  b.max_blocks = -1;
  refused(b);
  b.form = GemvRowsForm::kTma;  // the TMA form checks the same arguments
  refused(b);
  b = a;
  b.consumer_warps = 6;
  refused(b);
  b = a;
  b.splits = 2;  // forced K splits with nowhere to put their partials
  refused(b, GemvRowsOutput::kResidual);
  alignas(16) static float partials[kGemvRowsMaxSplits * 4 * 64 + 1];
  alignas(16) static int arrivals[4];
  b.partials = partials;
  b.partials_n = 2 * 4 * 64 - 1;  // one float short of two splits
  b.arrivals = arrivals;
  b.arrivals_n = 4;
  refused(b, GemvRowsOutput::kResidual);
  b.partials_n = 2 * 4 * 64;
  b.arrivals_n = 3;  // N / 16 = 4 counters needed
  refused(b, GemvRowsOutput::kResidual);
  b.arrivals_n = 4;
  b.partials = partials + 1;  // misaligned
  refused(b, GemvRowsOutput::kResidual);
  b.partials = partials;
  b.splits = kGemvRowsMaxSplits + 1;
  b.partials_n = sizeof(partials) / sizeof(float);
  refused(b, GemvRowsOutput::kResidual);
  EXPECT_FALSE(gemv_rows_supports(8, 64));
  EXPECT_TRUE(gemv_rows_supports(4096, 12288));
}
