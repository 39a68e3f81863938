// The device draw (runtime/cuda/row_draws.h) against the host's draw_token (runtime/draw.h): the
// same token from the same row and parameters, bit for bit, since both make every weight, key
// and sum with the same operations (draw_math.h). Fresh random rows and parameters each run
// (the seed is printed), across the cuts' corners: ties, flat rows, T -> 0 and very hot T, top-k
// of 1 and past the candidates (the kernel's gathered path for top-k up to 1,024 and its radix
// selects), top-p far into the tail; a row holding a NaN or Inf gets -1; the
// tokens are poisoned before the kernel writes them. Then sampled generation on the hand-written
// lane, drawn on the device, against the same lane drawing on the host; and the same with the
// penalties applied on the device first (greedy and sampled).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/counting_lane.h"
#include "lanes/qwen/handwritten_lane.h"
#include "model/model_dir.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/row_draws.h"
#include "runtime/draw.h"
#include "runtime/penalties.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "test_util.h"

using namespace lg;
using namespace lg::qwen::test;
namespace fs = std::filesystem;

namespace {

/// Rows of `V` logits of assorted shapes (row r's kind is r % 6).
std::vector<float> random_rows(std::mt19937_64& g, int R, int64_t V) {
  std::vector<float> l(static_cast<size_t>(R * V));
  std::normal_distribution<float> n(0.f, 1.f);
  for (int r = 0; r < R; ++r) {
    float* row = l.data() + r * V;
    const int kind = r % 6;
    const float scale = std::array<float, 6>{1.f, 3.f, 10.f, 1.f, 0.5f, 30.f}[kind];
    for (int64_t i = 0; i < V; ++i) {
      float x = scale * n(g);
      if (kind == 3) x = std::round(x * 2.f) / 2.f;  // many ties
      if (kind == 4) x = 0.25f;                      // flat: top-p reaches far into the ids
      row[i] = x;
    }
    if (kind == 5) row[g() % V] = 400.f;  // one token holds all the mass
  }
  return l;
}

DrawParams random_params(std::mt19937_64& g, int64_t V) {
  DrawParams p;
  const float t = std::array<float, 7>{1e-4f, 0.3f, 0.7f, 1.f, 1.5f, 100.f, 1e-38f}[g() % 7];
  p.inv_temperature = static_cast<float>(1.0 / t);
  if (g() % 9 == 0) p.inv_temperature = INFINITY;
  // 1,024 at V = 151,936: gathering the tokens above the threads' 1,024th largest key overflows the
  // kernel's 4,096 places on most rows, so the radix path takes over there.
  p.top_k = static_cast<int32_t>(std::array<int64_t, 8>{0, 0, 1, 5, 50, 1024, V - 1, V + 5}[g() % 8]);
  p.top_p = std::array<double, 6>{1, 1, 0.95, 0.5, 0.1, 0.9999}[g() % 6];
  p.min_p = std::array<float, 5>{0, 0, 0.05f, 0.5f, 1.f}[g() % 5];
  p.key = g();
  return p;
}

/// The tokens of `n` requests of random prompts (the same ones for a seed) run together by a
/// scheduler on `lane`, `set` choosing request i's generation options from the same generator.
std::vector<std::vector<int32_t>> run_requests(
    Lane& lane, uint64_t seed, size_t n, const std::function<void(size_t, std::mt19937_64&, runtime::GenerateOptions&)>& set) {
  runtime::Scheduler sched(lane);
  std::vector<std::vector<int32_t>> out(n);
  std::mt19937_64 r(seed);
  for (size_t i = 0; i < n; ++i) {
    runtime::Request q;
    for (int k = 0, len = 2 + static_cast<int>(r() % 90); k < len; ++k) q.prompt.push_back(static_cast<int32_t>(r() % 5000));
    set(i, r, q.options);
    q.on_done = [&out, i](runtime::Generation&& gen, const std::string& error) {
      EXPECT_EQ(error, "");
      out[i] = std::move(gen.tokens);
    };
    sched.submit(std::move(q));
  }
  sched.run();
  return out;
}

/// `n` requests (run_requests, options from `set`) on the 22M model's hand-written lane, picked on
/// the device and then by the host from the rows: each request's tokens must be the same, and the
/// device's run must have brought no row back and drawn at least `min_draws` tokens.
void expect_device_picks_as_host(size_t n, int64_t min_draws,
                                 const std::function<void(size_t, std::mt19937_64&, runtime::GenerateOptions&)>& set) {
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "models" / "qwen3-pycode-22m");
  auto lane = qwen::make_handwritten_lane(md, {.max_seq = 256, .max_tokens = 64});
  const uint64_t seed = std::random_device{}();
  lg::testing::CountingLane device(*lane, /*forward_draws=*/true), host(*lane);
  const auto on_device = run_requests(device, seed, n, set);
  const auto on_host = run_requests(host, seed, n, set);
  EXPECT_EQ(device.with_logits, 0);
  EXPECT_GE(device.with_draw, min_draws);
  for (size_t i = 0; i < on_device.size(); ++i) EXPECT_EQ(on_device[i], on_host[i]) << "request " << i << ", seed " << seed;
}

}  // namespace

TEST(RowDraws, DeviceDrawsEqualTheHostReference) {
  LG_REQUIRE_GPU();
  const uint64_t seed = std::random_device{}();
  std::printf("[ row draws ] seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 g(seed);
  for (const int64_t V : {int64_t{1}, int64_t{37}, int64_t{1000}, int64_t{151936}}) {
    const int R = V == 1 ? 4 : 96;
    std::vector<float> logits = random_rows(g, R, V);
    // Two rows that are not finite: no draw is defined over them.
    if (V > 1) {
      logits[static_cast<size_t>(7 * V + 3)] = NAN;
      logits[static_cast<size_t>(8 * V + V - 1)] = INFINITY;
    }
    std::vector<DrawParams> params(static_cast<size_t>(R));
    std::vector<int32_t> rows(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r) {
      params[r] = random_params(g, V);
      rows[r] = (r * 7) % R;  // not in order: row r of the draw list reads logits row rows[r]
    }
    cuda::DeviceBuffer d_logits(logits.size() * 4), d_params(params.size() * sizeof(DrawParams)),
        d_rows(rows.size() * 4), d_tokens(rows.size() * 4);
    d_logits.upload(logits.data(), logits.size() * 4);
    d_params.upload(params.data(), params.size() * sizeof(DrawParams));
    d_rows.upload(rows.data(), rows.size() * 4);
    cuda::memset_device_now(d_tokens.data(), 0x5A, d_tokens.bytes());  // poison
    cuda::Stream s;
    cuda::launch_row_draws(d_logits.as<float>(), V, d_params.as<DrawParams>(), d_rows.as<int32_t>(),
                           d_tokens.as<int32_t>(), R, s.get());
    s.synchronize();
    std::vector<int32_t> got(static_cast<size_t>(R));
    d_tokens.download(got.data(), got.size() * 4);
    int cut = 0;
    for (int r = 0; r < R; ++r) {
      const std::span<const float> row(logits.data() + rows[r] * V, static_cast<size_t>(V));
      const bool finite = std::all_of(row.begin(), row.end(), [](float x) { return std::isfinite(x); });
      const int32_t want = finite ? runtime::draw_token(row, params[r]) : -1;
      cut += params[r].top_k > 0 || params[r].top_p < 1 || params[r].min_p > 0;
      EXPECT_EQ(got[r], want) << "V " << V << ", draw " << r << " (row " << rows[r] << "): 1/T "
                              << params[r].inv_temperature << ", top_k " << params[r].top_k << ", top_p "
                              << params[r].top_p << ", min_p " << params[r].min_p << ", key " << params[r].key;
    }
    std::printf("[ row draws ] V %lld: %d draws, %d with a cut, equal to the host's\n", static_cast<long long>(V), R, cut);
  }
}

TEST(RowDraws, SampledGenerationOnTheDeviceEqualsTheHostsDraws) {
  LG_REQUIRE_GPU();
  auto md = model::ModelDir::open(fs::path(shared_dir()) / "models" / "qwen3-pycode-22m");
  auto lane = qwen::make_handwritten_lane(md, {.max_seq = 256});
  ASSERT_TRUE(lane->draws());
  // The lane drawing on the device, and the same lane behind a wrapper that does not draw
  // (Lane::draws false): the host draws from logits rows.
  lg::testing::CountingLane device(*lane, /*forward_draws=*/true), host(*lane);
  const std::vector<int32_t> prompt = {750, 282, 2075, 11, 25, 198};
  for (const auto& [t, k, top_p] : std::vector<std::tuple<double, int64_t, double>>{{0.8, 0, 1}, {1.0, 50, 0.9}, {0.6, 20, 0.95}}) {
    runtime::GenerateOptions o;
    o.max_new_tokens = 48;
    o.sampling.temperature = t;
    o.sampling.top_k = k;
    o.sampling.top_p = top_p;
    o.sampling.seed = std::random_device{}();
    const auto on_device = runtime::generate(device, prompt, o).tokens;
    const auto on_host = runtime::generate(host, prompt, o).tokens;
    EXPECT_EQ(on_device, on_host) << "temperature " << t << ", top_k " << k << ", top_p " << top_p << ", seed "
                                  << o.sampling.seed;
  }
  EXPECT_EQ(device.with_logits, 0);  // the device's draws never brought a row back
  EXPECT_EQ(device.with_draw, host.with_logits);
  EXPECT_GT(host.with_logits, 0);
}

// Several sequences drawing in one step (prefill chunks beside decodes, decode graphs of padded
// buckets): the scheduler's schedule and the lane's logits are the same whether the lane or the
// host draws, so every request's tokens must be too.
TEST(RowDraws, BatchedSampledRequestsDrawOnTheDeviceAsOnTheHost) {
  LG_REQUIRE_GPU();
  // At least 20 tokens a request, each drawn on the device.
  expect_device_picks_as_host(7, 7 * 20, [](size_t i, std::mt19937_64& r, runtime::GenerateOptions& o) {
    o.max_new_tokens = 20 + static_cast<int64_t>(r() % 20);
    o.sampling.temperature = std::array<double, 3>{0.6, 1.0, 1.3}[i % 3];
    o.sampling.top_k = std::array<int64_t, 3>{20, 0, 0}[i % 3];
    o.sampling.top_p = std::array<double, 3>{0.95, 0.9, 1.0}[i % 3];
    o.sampling.seed = r();
  });
}

// Penalised draws through RowDraws (the lanes' path): each row's edits applied on the device, then
// its draw, against the host's lane form of the same pick (draw_token with the edits), on fresh
// random rows, histories and parameters, greedy (top-k 1) among them, tie-heavy rows too; rows
// without penalties in the same launch. The penalised rows themselves must be the host's
// apply_logit_edits bit for bit, with factors whose products round (not multiples of 1/2), and
// logits of +-0, subnormals and values the penalties push past f32's range; a row whose sequence
// draws nothing is left as it was. check() refuses what launch() cannot do.
TEST(RowDraws, PenalisedDrawsEqualTheHostReference) {
  LG_REQUIRE_GPU();
  const uint64_t seed = std::random_device{}();
  std::printf("[ row draws ] seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> factor(-2, 2), repetition(0.2, 4);
  for (const int64_t V : {int64_t{37}, int64_t{1000}, int64_t{151936}}) {
    const int R = 72;
    std::vector<float> logits = random_rows(g, R, V);
    // Odd values where the edits will land, in every other row: +-0, subnormals, the range's edges.
    const std::array<float, 6> odd = {0.0f, -0.0f, 1e-40f, -3e-39f, 3.0e38f, -3.0e38f};
    for (int r = 0; r < R; r += 2)
      for (int k = 0; k < 6; ++k) logits[static_cast<size_t>(r * V + (k * 5) % V)] = odd[static_cast<size_t>(k)];
    const std::vector<float> host = logits;  // the kernel edits the device's copy in place
    std::vector<DrawParams> params(static_cast<size_t>(R));
    std::vector<std::vector<LogitEdit>> edits(static_cast<size_t>(R));
    std::vector<SeqStep> batch(static_cast<size_t>(R));
    const std::vector<int32_t> token = {0};
    for (int r = 0; r < R; ++r) {
      params[r] = random_params(g, V);
      if (r % 4 == 3) params[r] = DrawParams{.top_k = 1};  // a greedy pick; r % 6 == 3 rows are tie-heavy
      // A history of up to 3,000 distinct ids (its edits), some generated many times; the odd
      // values' ids and the row's largest logit among them.
      if (r % 5 != 4) {
        std::vector<int32_t> ids(static_cast<size_t>(std::min<int64_t>(V, 1 + static_cast<int64_t>(g() % 3000))));
        for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>(k);
        std::shuffle(ids.begin(), ids.end(), g);
        for (int k = 0; k < 6; ++k) ids.push_back(static_cast<int32_t>((k * 5) % V));
        ids.push_back(static_cast<int32_t>(std::max_element(host.begin() + r * V, host.begin() + (r + 1) * V) -
                                           (host.begin() + r * V)));
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        std::shuffle(ids.begin(), ids.end(), g);
        // Some unseen (a logit_bias alone), some biased (by amounts whose sums round), some held
        // (min_tokens).
        for (const int32_t id : ids) {
          LogitEdit e{id, static_cast<int32_t>(g() % 3 == 0 ? 0 : g() % 50)};
          if (g() % 10 == 0) e.count = LogitEdit::kUnseen;
          if (g() % 4 == 0) e.bias = static_cast<float>(factor(g) * 50.3);
          if (g() % 20 == 0) e.bias = LogitEdit::kHeld;
          edits[r].push_back(e);
        }
      }
      batch[r].tokens = token;
      batch[r].draw = params[r];
      runtime::Penalties pen{repetition(g), factor(g), factor(g)};
      if (r % 9 == 1) pen.repetition = 1e-300;  // every positive logit seen past f32's range
      if (r % 9 == 2) pen.repetition = 1e300;   // every negative one
      batch[r].penalty = runtime::penalty_params(pen);
      batch[r].logit_edits = edits[r];
    }
    batch[1].draw.reset();  // a sequence that draws nothing: its edits are not applied
    cuda::DeviceBuffer d_logits(logits.size() * 4);
    d_logits.upload(logits.data(), logits.size() * 4);
    cuda::RowDraws draws(R);
    cuda::Stream s;
    draws.check(batch, V);
    ASSERT_TRUE(draws.launch(d_logits.as<float>(), V, batch, s.get()));
    s.synchronize();
    std::vector<SeqResult> got(static_cast<size_t>(R));
    draws.collect(batch, got);
    std::vector<float> edited(logits.size());
    d_logits.download(edited.data(), edited.size() * 4);
    int moved = 0, rows_checked = 0;
    for (int r = 0; r < R; ++r) {
      const std::span<const float> row(host.data() + r * V, static_cast<size_t>(V));
      std::vector<float> want_row(row.begin(), row.end());
      if (batch[r].draw) runtime::apply_logit_edits(want_row, batch[r].penalty, edits[r]);
      ASSERT_EQ(std::memcmp(want_row.data(), edited.data() + r * V, static_cast<size_t>(V) * 4), 0)
          << "V " << V << ", row " << r << ": the device's penalised row differs from the host's";
      ++rows_checked;
      if (!batch[r].draw) {
        EXPECT_EQ(got[r].drawn, -1) << "row " << r;
        continue;
      }
      const int32_t want = runtime::draw_token(row, params[r], batch[r].penalty, edits[r]);
      moved += !edits[r].empty() && want != runtime::draw_token(row, params[r]);
      EXPECT_EQ(got[r].drawn, want) << "V " << V << ", row " << r << ": " << edits[r].size() << " edits, 1/T "
                                    << params[r].inv_temperature << ", top_k " << params[r].top_k << ", top_p "
                                    << params[r].top_p << ", min_p " << params[r].min_p;
    }
    std::printf("[ row draws ] V %lld: %d rows equal to the host's, %d penalised draws, %d moved by the penalties\n",
                static_cast<long long>(V), rows_checked, R - 1, moved);
    EXPECT_GT(moved, 0);
  }
  // check() refuses, before anything runs: an edit outside the vocabulary, a penalised draw that
  // also asks for its logits (which the edits would change), more draws than the rows made for.
  std::vector<LogitEdit> bad = {{5, 1}, {37, 0}}, fine = {{5, 1}};
  std::vector<SeqStep> one(1);
  const std::vector<int32_t> token = {0};
  one[0].tokens = token;
  one[0].draw = DrawParams{.top_k = 1};
  one[0].logit_edits = bad;
  cuda::RowDraws draws(1);
  EXPECT_THROW(draws.check(one, 37), Error);
  one[0].logit_edits = fine;
  one[0].want_logits = true;
  EXPECT_THROW(draws.check(one, 37), Error);
  one[0].want_logits = false;
  EXPECT_NO_THROW(draws.check(one, 37));
  std::vector<SeqStep> two = {one[0], one[0]};
  EXPECT_THROW(draws.check(two, 37), Error);
}

// Penalised requests, greedy and sampled, in shared steps: drawn on the device (their rows never
// leave it) as the host picks them from the rows.
TEST(RowDraws, PenalisedRequestsDrawOnTheDeviceAsOnTheHost) {
  LG_REQUIRE_GPU();
  expect_device_picks_as_host(8, 8 * 24, [](size_t i, std::mt19937_64& r, runtime::GenerateOptions& o) {
    o.max_new_tokens = 24;
    o.sampling.temperature = std::array<double, 4>{0, 0.8, 0, 1.0}[i % 4];
    o.sampling.top_p = i % 4 == 1 ? 0.95 : 1.0;
    o.sampling.seed = r();
    o.sampling.penalties = std::array<runtime::Penalties, 4>{runtime::Penalties{1.3, 0, 0}, runtime::Penalties{1, 0.5, 0.3},
                                                            runtime::Penalties{1.1, 1.5, 0},
                                                            runtime::Penalties{1, 0, 1.0}}[(i / 4 + i) % 4];
    // logit_bias and min_tokens on some: edits of unseen tokens, and held ones, on the device too.
    if (i % 3 == 0) o.sampling.logit_bias = {{static_cast<int32_t>(100 + r() % 4900), 7.5f}, {11, -100.0f}, {13, 3.25f}};
    if (i % 3 == 1) {
      o.sampling.min_tokens = 12;
      o.sampling.min_tokens_held = {static_cast<int32_t>(r() % 5000), 11, 13, 198};
    }
  });
}
