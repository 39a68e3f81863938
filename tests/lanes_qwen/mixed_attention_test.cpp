// The two attention launches of a mixed step on the rows path (HandwrittenQwenLane::run_rows):
//   - the batched decode attention (v6 and v9) with a row map does, for entry b, exactly what it does
//     without one for a projection whose row b is row rows[b]: the same output bits land in row
//     rows[b], the same K/V bits in the pool, and the rows no entry names are not written;
//   - the ragged attention with a token list does exactly the listed tokens: their output rows
//     bit for bit as the launch over all tokens, the others not written.
// Bit equality, not a tolerance: each block or warp does the same arithmetic on the same values
// either way (the math itself is checked against references in kernels_test.cpp and end to end in
// batch_test.cpp). Outputs are NaN-poisoned first; pools hold NaN outside the sequences' rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lanes/qwen/kernels.h"
#include "runtime/cuda/device.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen;
using namespace lg::qwen::test;

namespace {

std::vector<uint16_t> download_raw(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<uint16_t> v(n);
  b.download(v.data(), n * sizeof(uint16_t));
  return v;
}

/// Row r (`width` elements) of a bf16 array, raw.
std::vector<uint16_t> row_of(const std::vector<uint16_t>& a, size_t r, size_t width) {
  return {a.begin() + static_cast<std::ptrdiff_t>(r * width), a.begin() + static_cast<std::ptrdiff_t>((r + 1) * width)};
}

}  // namespace

TEST(QwenMixedAttention, DecodeBatchRowMapReadsAndWritesItsRows) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  struct C {
    int H, KV, Dh, bs;
    std::vector<int> lens;  // entry b's positions after the step: its query is at lens[b] - 1
    std::vector<int> rows;  // entry b's row of the step's T rows
    int T;
  };
  const std::vector<C> cases = {
      C{8, 2, 64, 16, {200, 5, 70}, {4, 0, 2}, 6},
      C{16, 2, 128, 16, {1, 700, 33, 129}, {1, 6, 3, 7}, 9},
      C{4, 4, 32, 8, {40, 300}, {2, 0}, 3},
  };
  for (const C& c : cases) {
    const int B = static_cast<int>(c.lens.size());
    const int width = (c.H + 2 * c.KV) * c.Dh, HD = c.H * c.Dh;
    const TestPages pages = scattered_pages(rng, c.lens, c.bs, 2);
    const int stride = pages.widest() + 1;
    std::vector<Bf16Vec> k, v;
    std::vector<const Bf16Vec*> kp, vp;
    for (int len : c.lens) {
      k.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -2, 2));
      v.push_back(random_bf16(rng, size_t(c.KV) * len * c.Dh, -1, 1));
    }
    for (size_t i = 0; i < k.size(); ++i) kp.push_back(&k[i]), vp.push_back(&v[i]);
    const std::vector<uint16_t> kpool = scatter_to_pool(pages, kp, c.lens, c.KV, c.Dh);
    const std::vector<uint16_t> vpool = scatter_to_pool(pages, vp, c.lens, c.KV, c.Dh);
    // The step's projection rows (the mapped launch's) and the entries' rows alone (the plain one's).
    const std::vector<float> qkv_all = random_f32(rng, size_t(c.T) * width, -2, 2);
    std::vector<float> qkv_entries;
    std::vector<int> pos;
    int max_len = 1;
    for (int b = 0; b < B; ++b) {
      qkv_entries.insert(qkv_entries.end(), qkv_all.begin() + size_t(c.rows[size_t(b)]) * width,
                         qkv_all.begin() + size_t(c.rows[size_t(b)] + 1) * width);
      pos.push_back(c.lens[size_t(b)] - 1);
      max_len = std::max(max_len, c.lens[size_t(b)]);
    }
    std::vector<float> inv(size_t(c.Dh / 2));
    for (int i = 0; i < c.Dh / 2; ++i) inv[size_t(i)] = 1.0f / powf(1e6f, float(2 * i) / float(c.Dh));
    const auto qn = random_f32(rng, size_t(c.Dh), 0.5f, 1.5f), kn = random_f32(rng, size_t(c.Dh), 0.5f, 1.5f);
    auto dinv = to_device(inv), dqn = to_device(qn), dkn = to_device(kn), dbt = to_device(pages.padded(stride)),
         dpos = to_device(pos), drows = to_device(c.rows), dall = to_device(qkv_all), dentries = to_device(qkv_entries);
    const int splits = decode_attention_batch_splits(c.H, c.KV, B, max_len);
    std::vector<BatchAttnPlan> plans{{BatchAttnForm::kTiles, splits}, {BatchAttnForm::kTensorCores, splits}};
    if (attention_decode_long_supports(c.H, c.KV, c.Dh)) {
      plans.push_back({BatchAttnForm::kRows, splits});
      plans.push_back({BatchAttnForm::kTcRows, splits, c.H / c.KV, 4});
      plans.push_back({BatchAttnForm::kTcRows, splits, c.H / c.KV, 2});
    }
    auto scratch = poisoned_f32(decode_attention_batch_scratch_floats(c.H, c.KV, c.Dh, B));
    auto counters = to_device(std::vector<int>(size_t(B) * c.H, 0));

    // launch(mapped): the pools after it, and its output.
    auto launch = [&](BatchAttnPlan plan, bool mapped, std::vector<uint16_t>& k_after, std::vector<uint16_t>& v_after) {
      auto kc = to_device(kpool), vc = to_device(vpool);
      const QkvRopeArgs r = rope_args_for(c.H, c.KV, c.Dh, kv_pages(kc, vc, pages), dbt.as<int>(), dinv.as<float>(),
                                          nullptr, dqn.as<float>(), dkn.as<float>());
      const size_t out_rows = mapped ? size_t(c.T) : size_t(B);
      auto out = poisoned_bf16(out_rows * HD);
      launch_attention_decode_rope_batch(mapped ? dall.as<float>() : dentries.as<float>(), r, B, stride, plan, 1e-6f,
                                         dpos.as<int>(), scratch.as<float>(), counters.as<int>(), out.as<bf16>(),
                                         s.get(), mapped ? drows.as<int>() : nullptr);
      s.synchronize();
      k_after = download_raw(kc, kpool.size());
      v_after = download_raw(vc, vpool.size());
      return download_raw(out, out_rows * HD);
    };
    for (const BatchAttnPlan& plan : plans) {  // v6, v9 and v8's rows form
      std::vector<uint16_t> k_plain, v_plain, k_mapped, v_mapped;
      const auto plain = launch(plan, false, k_plain, v_plain);
      const auto mapped = launch(plan, true, k_mapped, v_mapped);
      const std::string what = "H=" + std::to_string(c.H) + " KV=" + std::to_string(c.KV) + " Dh=" + std::to_string(c.Dh) +
                               " splits=" + std::to_string(splits) + " form " + std::to_string(int(plan.form));
      std::vector<bool> named(size_t(c.T), false);
      for (int b = 0; b < B; ++b) {
        const size_t r = size_t(c.rows[size_t(b)]);
        named[r] = true;
        const auto want = row_of(plain, size_t(b), size_t(HD));
        for (uint16_t x : want) ASSERT_NE(x, 0x7fc0) << what << ": the plain launch left entry " << b << " unwritten";
        EXPECT_EQ(row_of(mapped, r, size_t(HD)), want) << what << ": entry " << b << " (row " << r << ")";
      }
      for (int t = 0; t < c.T; ++t) {
        if (!named[size_t(t)]) {
          EXPECT_EQ(row_of(mapped, size_t(t), size_t(HD)), std::vector<uint16_t>(size_t(HD), 0x7fc0))
              << what << ": row " << t << " is no entry's, written";
        }
      }
      EXPECT_TRUE(k_mapped == k_plain && v_mapped == v_plain) << what << ": the K/V written differ";
    }
  }
}

TEST(QwenMixedAttention, RaggedTokenListDoesOnlyThoseTokens) {
  LG_REQUIRE_GPU();
  auto rng = fresh_rng();
  cuda::Stream s;
  // Sequences (positions held after the step, new tokens at the end): a prompt chunk, a decode
  // token (left to the decode attention), a whole prompt, another decode token.
  const int H = 8, KV = 2, Dh = 64, bs = 16;
  const std::vector<int> lens{150, 300, 40, 9}, chunk{23, 1, 40, 1};
  const TestPages pages = scattered_pages(rng, lens, bs, 2);
  const int stride = pages.widest() + 2;
  std::vector<Bf16Vec> k, v;
  std::vector<const Bf16Vec*> kp, vp;
  for (int len : lens) {
    k.push_back(random_bf16(rng, size_t(KV) * len * Dh, -2, 2));
    v.push_back(random_bf16(rng, size_t(KV) * len * Dh, -1, 1));
  }
  for (size_t i = 0; i < k.size(); ++i) kp.push_back(&k[i]), vp.push_back(&v[i]);
  std::vector<int> seq, pos, list;
  for (size_t b = 0; b < lens.size(); ++b)
    for (int p = lens[b] - chunk[b]; p < lens[b]; ++p) {
      if (chunk[b] > 1) list.push_back(int(seq.size()));
      seq.push_back(int(b));
      pos.push_back(p);
    }
  std::reverse(list.begin(), list.end());  // any order
  const int T = int(seq.size()), HD = H * Dh;
  auto dq = to_device(random_f32(rng, size_t(T) * HD, -2, 2)), dk = to_device(scatter_to_pool(pages, kp, lens, KV, Dh)),
       dv = to_device(scatter_to_pool(pages, vp, lens, KV, Dh)), dbt = to_device(pages.padded(stride)),
       dseq = to_device(seq), dpos = to_device(pos), dlist = to_device(list);
  auto all = poisoned_bf16(size_t(T) * HD), some = poisoned_bf16(size_t(T) * HD);
  launch_attention_ragged(dq.as<float>(), kv_pages(dk, dv, pages), dbt.as<int>(), stride, dseq.as<int>(), dpos.as<int>(),
                          T, H, KV, Dh, all.as<bf16>(), s.get());
  launch_attention_ragged(dq.as<float>(), kv_pages(dk, dv, pages), dbt.as<int>(), stride, dseq.as<int>(), dpos.as<int>(),
                          int(list.size()), H, KV, Dh, some.as<bf16>(), s.get(), dlist.as<int>());
  s.synchronize();
  const auto want = download_raw(all, size_t(T) * HD), got = download_raw(some, size_t(T) * HD);
  std::vector<bool> listed(size_t(T), false);
  for (int t : list) listed[size_t(t)] = true;
  for (int t = 0; t < T; ++t) {
    if (listed[size_t(t)])
      EXPECT_EQ(row_of(got, size_t(t), size_t(HD)), row_of(want, size_t(t), size_t(HD))) << "token " << t;
    else
      EXPECT_EQ(row_of(got, size_t(t), size_t(HD)), std::vector<uint16_t>(size_t(HD), 0x7fc0))
          << "token " << t << " is not listed, written";
  }
}
