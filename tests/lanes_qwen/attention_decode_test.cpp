// The hand-written decode and ragged attention kernels against a causal GQA attention in double,
// on fresh random inputs with outputs poisoned with NaN before each launch (kernels_test.cpp's
// method and bounds: the inputs are rounded to bf16 on the host, so the bounds only cover fp32
// accumulation order and the final bf16 rounding). The KV cache is paged: pools whose sequences'
// blocks are scattered (test_util.h: scattered_pages), every row no sequence holds NaN, the
// references on the sequences' logical rows. Kernels that hand work between blocks through
// counters are launched twice on fresh poison: the second launch checks that the first left its
// counters at zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"
#include "rope_ref.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;

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

// Positions 0..pos of one sequence in a pool of scattered blocks (block sizes 1 .. 128); the
// split grid sized for a context of 4096, as the lane sizes it for its max_seq.
TEST(QwenKernels, DecodeAttentionSplitKv) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, pos, bs;
  };
  for (C c : {C{4, 2, 16, 0, 16}, C{4, 1, 32, 36, 8}, C{8, 8, 64, 1000, 16}, C{32, 8, 128, 2047, 16},
              C{16, 2, 128, 5, 1}, C{8, 1, 64, 4095, 128}, C{28, 4, 128, 33, 16}, C{12, 2, 64, 130, 32}}) {
    const int max_seq = 4096, len = c.pos + 1;
    const TestPages pages = scattered_pages(rng, {len}, c.bs, 3);
    auto q = random_f32(rng, size_t(c.H) * c.Dh, -2, 2);
    auto k = random_bf16(rng, size_t(c.KV) * len * c.Dh, -2, 2), v = random_bf16(rng, size_t(c.KV) * len * c.Dh, -1, 1);
    auto dq = to_device(q), dpos = to_device(std::vector<int>{c.pos}), dbt = to_device(pages.tables[0]);
    auto dk = to_device(scatter_to_pool(pages, {&k}, {len}, c.KV, c.Dh));
    auto dv = to_device(scatter_to_pool(pages, {&v}, {len}, c.KV, c.Dh));
    auto counters = to_device(std::vector<int>(c.H, 0));
    auto want = attention_ref(q, k, v, 1, c.H, c.KV, c.Dh, len, c.pos);
    for (int rep = 0; rep < 2; ++rep) {  // the second launch needs the counters the first left at zero
      auto scratch = poisoned_f32(decode_attention_scratch_floats(c.H, c.Dh));
      auto out = poisoned_bf16(size_t(c.H) * c.Dh);
      launch_attention_decode(dq.as<float>(), kv_pages(dk, dv, pages), dbt.as<int>(), dpos.as<int>(), c.H, c.KV, c.Dh,
                              max_seq, scratch.as<float>(), counters.as<int>(), out.as<bf16>(), s.get());
      s.synchronize();
      EXPECT_LT(rel_err(download_bf16(out, size_t(c.H) * c.Dh), want), 4e-3)
          << "H=" << c.H << " KV=" << c.KV << " Dh=" << c.Dh << " pos=" << c.pos << " bs=" << c.bs << " launch " << rep;
    }
    EXPECT_EQ(download_ints(counters, c.H), std::vector<int>(c.H, 0));
  }
}

// The decode attention fed by the raw QKV projection (launch_attention_decode_rope): this
// position's K/V rows written to the pool (where the block table puts them) against the RoPE
// reference (bf16 bound, 4e-3), and the output against attention_ref over the reference query and
// the sequence's rows the device holds afterwards (random earlier rows, this position's row as the
// kernel wrote it; bf16 output bound). The query is fp32 from the same fp32 inputs on both sides,
// so it adds only fp32 roundoff. Launched twice per form (the split counters must be back at
// zero): per query head (v7) and by KV head (launch_attention_decode_rope_long, v8, which runs
// its own kernel for groups 2 and 4 at Dh 64 and 128, and v7 for the rest).
// Positions: one chunk of the lane's 128 keys, written by its block without a merge (0, 5, 33,
// 77), and merged splits (131, 300, 2000, 4095); GQA groups 1, 2, 4, 7; scattered blocks of 1 .. 64.
TEST(QwenKernels, DecodeAttentionRopeFromRawQkv) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, pos, bs;
    bool bias, norm;
  };
  for (C c : {C{4, 2, 16, 0, 16, true, false}, C{4, 1, 32, 33, 16, false, true}, C{32, 8, 128, 2000, 16, false, true},
              C{14, 2, 64, 77, 4, true, false}, C{16, 8, 128, 4095, 64, false, true}, C{16, 8, 128, 131, 1, true, true},
              C{8, 8, 64, 5, 16, false, true}, C{16, 4, 64, 300, 8, true, true}}) {
    const int max_seq = 4096, len = c.pos + 1, N = (c.H + 2 * c.KV) * c.Dh;
    const TestPages pages = scattered_pages(rng, {len}, c.bs, 3);
    const size_t logical_n = size_t(c.KV) * len * c.Dh, pool_n = size_t(c.KV) * pages.rows() * c.Dh;
    const float eps = 1e-6f;
    auto y = random_f32(rng, N, -3, 3);
    auto bias = random_f32(rng, N, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    auto k0 = random_bf16(rng, logical_n, -2, 2), v0 = random_bf16(rng, logical_n, -1, 1);
    for (int h = 0; h < c.KV; ++h)  // this position's rows: poison, the kernel must write them
      for (int d = 0; d < c.Dh; ++d)
        k0.raw[(size_t(h) * len + c.pos) * c.Dh + d] = v0.raw[(size_t(h) * len + c.pos) * c.Dh + d] = 0x7fc0;
    const auto kpool0 = scatter_to_pool(pages, {&k0}, {len}, c.KV, c.Dh);
    const auto vpool0 = scatter_to_pool(pages, {&v0}, {len}, c.KV, c.Dh);
    const std::vector<float> inv = inv_freq_of(c.Dh, 1e6);
    RopeRef want = rope_ref(std::vector<double>(y.begin(), y.end()), c.bias ? bias.data() : nullptr,
                            c.norm ? qn.data() : nullptr, c.norm ? kn.data() : nullptr, inv, c.pos, c.H, c.KV, c.Dh,
                            eps);
    const std::vector<float> want_q(want.q.begin(), want.q.end());
    auto dy = to_device(y), db = to_device(bias), dqn = to_device(qn), dkn = to_device(kn), dinv = to_device(inv),
         dpos = to_device(std::vector<int>{c.pos}), dbt = to_device(pages.tables[0]);
    auto counters = to_device(std::vector<int>(c.H, 0));
    for (int rep = 0; rep < 4; ++rep) {
      const bool by_kv_head = rep >= 2;
      auto kc = to_device(kpool0), vc = to_device(vpool0);
      auto scratch = poisoned_f32(decode_attention_scratch_floats(c.H, c.Dh));
      auto out = poisoned_bf16(size_t(c.H) * c.Dh);
      const QkvRopeArgs r = rope_args_for(c.H, c.KV, c.Dh, kv_pages(kc, vc, pages), dbt.as<int>(), dinv.as<float>(),
                                          c.bias ? db.as<float>() : nullptr, c.norm ? dqn.as<float>() : nullptr,
                                          c.norm ? dkn.as<float>() : nullptr, max_seq);
      if (by_kv_head)
        launch_attention_decode_rope_long(dy.as<float>(), r, eps, dpos.as<int>(), scratch.as<float>(),
                                          counters.as<int>(), out.as<bf16>(), s.get());
      else
        launch_attention_decode_rope(dy.as<float>(), r, eps, dpos.as<int>(), scratch.as<float>(), counters.as<int>(),
                                     out.as<bf16>(), s.get());
      s.synchronize();
      const std::string what = "H=" + std::to_string(c.H) + " KV=" + std::to_string(c.KV) + " Dh=" +
                               std::to_string(c.Dh) + " pos=" + std::to_string(c.pos) + " bs=" + std::to_string(c.bs) +
                               (by_kv_head ? " by KV head" : " per query head") + " launch " + std::to_string(rep % 2);
      const auto kpool = download_bf16(kc, pool_n), vpool = download_bf16(vc, pool_n);
      Bf16Vec gk, gv;
      gk.f = gather_from_pool(pages, kpool, 0, len, c.KV, c.Dh);
      gv.f = gather_from_pool(pages, vpool, 0, len, c.KV, c.Dh);
      EXPECT_LT(rel_err(cache_rows(gk.f, c.KV, len, c.Dh, c.pos), want.k), 4e-3) << "k " << what;
      EXPECT_LT(rel_err(cache_rows(gv.f, c.KV, len, c.Dh, c.pos), want.v), 4e-3) << "v " << what;
      const auto want_o = attention_ref(want_q, gk, gv, 1, c.H, c.KV, c.Dh, len, c.pos);
      EXPECT_LT(rel_err(download_bf16(out, size_t(c.H) * c.Dh), want_o), 4e-3) << "attention " << what;
      // Only this position's rows were written: every other row is as it was.
      size_t changed = 0;
      for (size_t i = 0; i < pool_n; ++i) {
        const float k_before = bf16_to_f32(kpool0[i]), v_before = bf16_to_f32(vpool0[i]);
        changed += !(kpool[i] == k_before || (std::isnan(kpool[i]) && std::isnan(k_before)));
        changed += !(vpool[i] == v_before || (std::isnan(vpool[i]) && std::isnan(v_before)));
      }
      EXPECT_EQ(changed, 2 * size_t(c.KV) * c.Dh) << "pool rows changed " << what;
    }
    EXPECT_EQ(download_ints(counters, c.H), std::vector<int>(c.H, 0));
  }
}

// The batched decode step's attention (launch_attention_decode_rope_batch) against the reference:
// sequences of very different lengths in one launch, each its own position, block table,
// partials and counters, from one shared pool: v6 (or v5 with LG_QWEN_ATTN_GQA=0: the GPU sessions
// run it both ways), v9 (its tensor-core form) and v8's rows form where it serves the shape, each
// at v6's splits for the batch and at one split (v9's only split count in the lane).
TEST(QwenKernels, DecodeAttentionRopeBatchAgainstReference) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, bs;
    std::vector<int> lens;
    bool bias, norm;
  };
  for (const C& c : {C{32, 8, 128, 16, {513, 1, 2100, 40}, false, true}, C{16, 8, 64, 8, {77, 300, 2}, true, true},
                     C{14, 2, 64, 16, {129, 5}, true, false}, C{32, 8, 128, 16, std::vector<int>(17, 600), false, true}}) {
    const int B = int(c.lens.size()), N = (c.H + 2 * c.KV) * c.Dh;
    const float eps = 1e-6f;
    const TestPages pages = scattered_pages(rng, c.lens, c.bs, 3);
    const int stride = pages.widest() + 1;
    const size_t pool_n = size_t(c.KV) * pages.rows() * c.Dh;
    auto y = random_f32(rng, size_t(B) * N, -3, 3);
    auto bias = random_f32(rng, N, -0.5f, 0.5f);
    auto qn = random_f32(rng, c.Dh, 0.5f, 1.5f), kn = random_f32(rng, c.Dh, 0.5f, 1.5f);
    std::vector<Bf16Vec> k, v;
    std::vector<int> pos;
    int max_len = 1;
    for (int len : c.lens) {
      k.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -2, 2));
      v.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -1, 1));
      for (int h = 0; h < c.KV; ++h)  // this position's rows: poison, the kernel must write them
        for (int d = 0; d < c.Dh; ++d)
          k.back().raw[(size_t(h) * len + len - 1) * c.Dh + d] = v.back().raw[(size_t(h) * len + len - 1) * c.Dh + d] =
              0x7fc0;
      pos.push_back(len - 1);
      max_len = std::max(max_len, len);
    }
    std::vector<const Bf16Vec*> kp, vp;
    for (size_t i = 0; i < k.size(); ++i) kp.push_back(&k[i]), vp.push_back(&v[i]);
    const std::vector<float> inv = inv_freq_of(c.Dh, 1e6);
    auto kc = to_device(scatter_to_pool(pages, kp, c.lens, c.KV, c.Dh));
    auto vc = to_device(scatter_to_pool(pages, vp, c.lens, c.KV, c.Dh));
    auto dy = to_device(y), db = to_device(bias), dqn = to_device(qn), dkn = to_device(kn), dinv = to_device(inv),
         dpos = to_device(pos), dbt = to_device(pages.padded(stride));
    auto check = [&](const BatchAttnPlan& plan) {
      const int splits = plan.splits;
      auto scratch = poisoned_f32(decode_attention_batch_scratch_floats(c.H, c.KV, c.Dh, B));
      auto counters = to_device(std::vector<int>(size_t(B) * c.H, 0));
      auto out = poisoned_bf16(size_t(B) * c.H * c.Dh);
      const QkvRopeArgs r = rope_args_for(c.H, c.KV, c.Dh, kv_pages(kc, vc, pages), dbt.as<int>(), dinv.as<float>(),
                                          c.bias ? db.as<float>() : nullptr, c.norm ? dqn.as<float>() : nullptr,
                                          c.norm ? dkn.as<float>() : nullptr);
      launch_attention_decode_rope_batch(dy.as<float>(), r, B, stride, plan, eps, dpos.as<int>(), scratch.as<float>(),
                                         counters.as<int>(), out.as<bf16>(), s.get());
      s.synchronize();
      const auto kpool = download_bf16(kc, pool_n), vpool = download_bf16(vc, pool_n);
      const auto got = download_bf16(out, size_t(B) * c.H * c.Dh);
      for (int b = 0; b < B; ++b) {
        const int len = c.lens[size_t(b)];
        const std::string what = "H=" + std::to_string(c.H) + " KV=" + std::to_string(c.KV) + " Dh=" +
                                 std::to_string(c.Dh) + " B=" + std::to_string(B) + " splits=" + std::to_string(splits) +
                                 " form " + std::to_string(int(plan.form)) + " heads " + std::to_string(plan.heads) +
                                 " warps " + std::to_string(plan.warps) +
                                 " sequence " + std::to_string(b) + " of length " +
                                 std::to_string(len);
        const std::vector<double> yb(y.begin() + std::ptrdiff_t(b) * N, y.begin() + std::ptrdiff_t(b + 1) * N);
        const RopeRef want = rope_ref(yb, c.bias ? bias.data() : nullptr, c.norm ? qn.data() : nullptr,
                                      c.norm ? kn.data() : nullptr, inv, len - 1, c.H, c.KV, c.Dh, eps);
        Bf16Vec gk, gv;
        gk.f = gather_from_pool(pages, kpool, size_t(b), len, c.KV, c.Dh);
        gv.f = gather_from_pool(pages, vpool, size_t(b), len, c.KV, c.Dh);
        EXPECT_LT(rel_err(cache_rows(gk.f, c.KV, len, c.Dh, len - 1), want.k), 4e-3) << "k " << what;
        EXPECT_LT(rel_err(cache_rows(gv.f, c.KV, len, c.Dh, len - 1), want.v), 4e-3) << "v " << what;
        const std::vector<float> want_q(want.q.begin(), want.q.end());
        const auto want_o = attention_ref(want_q, gk, gv, 1, c.H, c.KV, c.Dh, len, len - 1);
        const std::vector<float> got_b(got.begin() + std::ptrdiff_t(b) * c.H * c.Dh,
                                       got.begin() + std::ptrdiff_t(b + 1) * c.H * c.Dh);
        EXPECT_LT(rel_err(got_b, want_o), 4e-3) << "attention " << what;
      }
      EXPECT_EQ(download_ints(counters, size_t(B) * c.H), std::vector<int>(size_t(B) * c.H, 0));
    };
    for (const int splits : {decode_attention_batch_splits(c.H, c.KV, B, max_len), 1}) {
      check({BatchAttnForm::kTiles, splits});
      check({BatchAttnForm::kTensorCores, splits});
      if (!attention_decode_long_supports(c.H, c.KV, c.Dh)) continue;
      check({BatchAttnForm::kRows, splits, 2});
      if (c.H == 4 * c.KV && c.Dh == 128) check({BatchAttnForm::kRows, splits, 4});
      check({BatchAttnForm::kTcRows, splits, c.H / c.KV, 8});
      check({BatchAttnForm::kTcRows, splits, c.H / c.KV, 4});
      check({BatchAttnForm::kTcRows, splits, c.H / c.KV, 2});  // fewer warps than query heads at a group of 4
    }
    const BatchAttnPlan lane_plan = decode_attention_batch_plan(c.H, c.KV, c.Dh, B, max_len, max_len);
    check(lane_plan);  // the lane's choice at its own splits
  }
}

// decode_attention_batch_plan at the lane's shapes, 1 to 256 sequences of 1 to 32,768 positions:
// a form the shape takes, splits in range, and partials that fit the scratch the lane allocates
// for that batch (decode_attention_batch_scratch_floats: H x (Dh + 2) floats a (sequence, split)).
TEST(QwenKernels, DecodeAttentionBatchPlanFitsItsScratch) {
  LG_REQUIRE_GPU();
  struct Shape {
    int H, KV, Dh;
  };
  for (const Shape& sh : {Shape{32, 8, 128}, Shape{16, 8, 128}, Shape{32, 8, 64}, Shape{16, 8, 64}, Shape{14, 2, 64},
                          Shape{40, 8, 128}}) {
    for (int B = 1; B <= 256; B *= 2) {
      const size_t per_split = size_t(sh.H) * size_t(sh.Dh + 2);
      const size_t capacity = decode_attention_batch_scratch_floats(sh.H, sh.KV, sh.Dh, B) / per_split;
      for (int len = 1; len <= 32768; len *= 4) {
        const BatchAttnPlan p = decode_attention_batch_plan(sh.H, sh.KV, sh.Dh, B, len, len);
        const std::string what = "H=" + std::to_string(sh.H) + " KV=" + std::to_string(sh.KV) + " Dh=" +
                                 std::to_string(sh.Dh) + " B=" + std::to_string(B) + " len=" + std::to_string(len);
        EXPECT_GE(p.splits, 1) << what;
        EXPECT_LE(p.splits, kDecodeMaxSplits) << what;
        EXPECT_LE(size_t(p.splits) * size_t(B), capacity) << what;
        if (p.form == BatchAttnForm::kRows) {
          EXPECT_TRUE(attention_decode_long_supports(sh.H, sh.KV, sh.Dh)) << what;
          EXPECT_TRUE(p.heads == 2 || (p.heads == 4 && sh.H == 4 * sh.KV && sh.Dh == 128)) << what;
        }
        if (p.form == BatchAttnForm::kTcRows) {
          EXPECT_TRUE(attention_decode_long_supports(sh.H, sh.KV, sh.Dh)) << what;
          EXPECT_EQ(p.heads, sh.H / sh.KV) << what;
          EXPECT_TRUE(p.warps == 2 || p.warps == 4 || p.warps == 8) << what;
        }
      }
    }
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
  r.max_seq = 8;
  r.cache.k = r.cache.v = b;
  r.cache.rows = 16;
  r.cache.block_size = 16;
  r.block_table = &dummy;
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.Dh = 64;
  r.KV = 3;  // H not a multiple of KV
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.KV = 2;
  r.block_table = nullptr;
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.block_table = &dummy;
  r.cache.rows = 24;
  r.cache.block_size = 12;  // not a power of two
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
  r.cache.rows = 16;
  r.cache.block_size = 16;
  r.inv_freq = nullptr;
  EXPECT_THROW(launch_attention_decode_rope(&f, r, 1e-6f, &dummy, &f, &dummy, b, nullptr), Error);
}

// The ragged attention of a batched step: several sequences, each with a chunk of new tokens at
// the end of its cached positions (one decode token, a prefill chunk, a whole prompt from 0),
// blocks scattered over one pool, the tables padded with -1 to a common stride wider than any
// sequence needs. Each token's output against attention_ref over its own sequence's rows.
TEST(QwenKernels, RaggedPagedAttention) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct Seq {
    int len, chunk;  // positions held after the step, new tokens (the last `chunk` positions)
  };
  struct C {
    int H, KV, Dh, bs;
    std::vector<Seq> seqs;
  };
  const std::vector<C> cases = {
      C{4, 2, 16, 16, {{7, 7}, {1, 1}, {40, 1}}},
      C{4, 1, 32, 8, {{33, 33}, {50, 17}, {3, 1}, {100, 1}}},
      C{8, 4, 64, 16, {{17, 5}, {300, 1}, {64, 64}}},
      C{16, 8, 128, 32, {{130, 130}, {5, 2}}},
      C{14, 2, 64, 1, {{9, 3}, {12, 12}}},
  };
  for (const C& c : cases) {
    std::vector<int> lens;
    for (const Seq& q : c.seqs) lens.push_back(q.len);
    const TestPages pages = scattered_pages(rng, lens, c.bs, 2);
    const int stride = pages.widest() + 2;
    std::vector<Bf16Vec> k, v;
    for (int len : lens) {
      k.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -2, 2));
      v.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -1, 1));
    }
    std::vector<const Bf16Vec*> kp, vp;
    for (size_t i = 0; i < k.size(); ++i) kp.push_back(&k[i]), vp.push_back(&v[i]);
    std::vector<int> seq, pos;
    for (size_t b = 0; b < c.seqs.size(); ++b)
      for (int p = c.seqs[b].len - c.seqs[b].chunk; p < c.seqs[b].len; ++p) seq.push_back(int(b)), pos.push_back(p);
    const int T = int(seq.size()), HD = c.H * c.Dh;
    auto q = random_f32(rng, size_t(T) * HD, -2, 2);
    auto dq = to_device(q), dk = to_device(scatter_to_pool(pages, kp, lens, c.KV, c.Dh)),
         dv = to_device(scatter_to_pool(pages, vp, lens, c.KV, c.Dh)), dbt = to_device(pages.padded(stride)),
         dseq = to_device(seq), dpos = to_device(pos);
    auto out = poisoned_bf16(size_t(T) * HD);
    launch_attention_ragged(dq.as<float>(), kv_pages(dk, dv, pages), dbt.as<int>(), stride, dseq.as<int>(),
                            dpos.as<int>(), T, c.H, c.KV, c.Dh, out.as<bf16>(), s.get());
    s.synchronize();
    std::vector<double> want;
    for (int t = 0; t < T; ++t) {
      const std::vector<float> qt(q.begin() + size_t(t) * HD, q.begin() + size_t(t + 1) * HD);
      const size_t b = size_t(seq[size_t(t)]);
      auto o = attention_ref(qt, k[b], v[b], 1, c.H, c.KV, c.Dh, lens[b], pos[size_t(t)]);
      want.insert(want.end(), o.begin(), o.end());
    }
    EXPECT_LT(rel_err(download_bf16(out, size_t(T) * HD), want), 4e-3)
        << "H=" << c.H << " KV=" << c.KV << " Dh=" << c.Dh << " bs=" << c.bs << " T=" << T;
  }
}
