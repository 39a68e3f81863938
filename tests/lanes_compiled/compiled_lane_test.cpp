// The compiled lane on a GPU (skipped cleanly without one): the 22M Qwen3 model teacher-forced
// along the golden fp32 greedy tokens must pick the same token at every step whose recorded
// margin is above 0.1 (a smaller margin is a near tie that bf16 weights may flip), and its
// prefill logits must be within 2e-2 relative error (max |diff| / max |ref|) of the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "common/repo_dirs.h"
#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"
#include "common/step_alone.h"
#include "runtime/kv_blocks.h"
#include "runtime/solo_sequence.h"

namespace lg {
namespace {

TEST(CompiledLane, Pycode22mTeacherForcedMatchesGoldenAndReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", dir, {.max_seq = 256});
  auto ref = make_lane("cpu", dir, {.max_seq = 256});
  EXPECT_EQ(lane->name(), "compiled");
  std::ifstream f(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  auto golden = nlohmann::json::parse(f);
  int checked = 0;
  double worst_rel = 0;
  double decode_s = 0;
  int64_t decode_steps = 0;
  for (const auto& c : golden["cases"]) {
    auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    auto ids = c["fp32_cpu_greedy_ids"].get<std::vector<int32_t>>();
    auto margins = c["fp32_cpu_margins"].get<std::vector<double>>();
    SeqResult r = lg::testing::step_alone(*lane, prompt, 0, true);
    SeqResult want = lg::testing::step_alone(*ref, prompt, 0, true);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.logits.size(); ++i) {
      num = std::max(num, std::fabs(static_cast<double>(r.logits.at(i)) - want.logits[i]));
      den = std::max(den, std::fabs(static_cast<double>(want.logits[i])));
    }
    EXPECT_LT(num / den, 2e-2) << c["prompt"];
    worst_rel = std::max(worst_rel, num / den);
    auto pos = static_cast<int64_t>(prompt.size());
    for (size_t s = 0; s < ids.size(); ++s) {
      if (margins[s] > 0.1) {
        EXPECT_EQ(r.argmax, ids[s]) << c["prompt"] << " step " << s << " margin " << margins[s];
        ++checked;
      }
      if (s + 1 < ids.size()) {
        auto t0 = std::chrono::steady_clock::now();
        r = lg::testing::step_alone(*lane, std::vector<int32_t>{ids[s]}, pos++, false);
        decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++decode_steps;
      }
    }
  }
  EXPECT_GT(checked, 300);
  // What lg bench reports of the lane is its plan's count, as `lg compile --explain` prints it for
  // the 22M config (at most 6, issue 11).
  ASSERT_TRUE(lane->facts().launches_per_decode_layer.has_value());
  EXPECT_EQ(*lane->facts().launches_per_decode_layer, 6);
  std::cout << "compiled lane, 22M model: " << checked << " steps checked; worst prefill logits rel err "
            << worst_rel << "; decode "
            << 1e3 * decode_s / static_cast<double>(decode_steps) << " ms/token (step(), incl. the logits copy)\n";
}

// A prompt long enough for several 64-row query tiles and key tiles of the prefill attention and
// for cuBLASLt's tiled GEMMs (the golden prompts are short), then decode steps on top of it, on
// this lane and on the hand-written lane (the other bf16 forward), each against the fp32 CPU
// reference. How far a bf16 forward's logits are from fp32 depends on the prompt: over 40 random
// prompts (H100, bench/RESULTS.md, thirty-sixth session) the prefill's error ran from 0.004 to
// 0.016 and one draw reached 0.0202, past the 2e-2 this test once held this lane to alone, while
// the two lanes stayed within 0.0022 of each other on every draw. So this lane is held to the
// hand-written lane's error on the same draw plus 5e-3 (what a lane of its own would add: over
// twice the spread seen; 40 draws of this test, decode steps included, put this lane's worst at
// most 0.0018 above the hand-written lane's), and both to 5e-2 (a forward broken in both alike).
TEST(CompiledLane, LongPromptPrefillAndDecodeMatchReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", dir, {.max_seq = 512});
  auto hand = make_lane("handwritten", dir, {.max_seq = 512});
  auto ref = make_lane("cpu", dir, {.max_seq = 512});
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(dir.config.vocab_size - 1));
  std::vector<int32_t> prompt(333);
  for (auto& t : prompt) t = tok(rng);
  auto rel = [](const SeqResult& got, const SeqResult& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.logits.size(); ++i) {
      num = std::max(num, std::fabs(static_cast<double>(got.logits.at(i)) - want.logits[i]));
      den = std::max(den, std::fabs(static_cast<double>(want.logits[i])));
    }
    return num / den;
  };
  double worst = 0, worst_hand = 0;
  // One step of the three lanes: tokens at pos; returns the reference's argmax for the next.
  auto step = [&](const std::vector<int32_t>& tokens, int64_t pos, const std::string& what) {
    const SeqResult want = lg::testing::step_alone(*ref, tokens, pos, true);
    const double err = rel(lg::testing::step_alone(*lane, tokens, pos, true), want);
    const double err_hand = rel(lg::testing::step_alone(*hand, tokens, pos, true), want);
    EXPECT_LT(err, err_hand + 5e-3) << what << ": the compiled lane's error against the hand-written lane's";
    EXPECT_LT(std::max(err, err_hand), 5e-2) << what;
    worst = std::max(worst, err);
    worst_hand = std::max(worst_hand, err_hand);
    return want.argmax;
  };
  int32_t next = step(prompt, 0, "prefill of " + std::to_string(prompt.size()) + " tokens");
  for (int64_t s = 0; s < 4; ++s)
    next = step({next}, static_cast<int64_t>(prompt.size()) + s, "decode step " + std::to_string(s));
  std::cout << "random prompt of " << prompt.size() << " tokens and 4 decode steps: worst logits rel err "
            << worst << " (hand-written lane " << worst_hand << ")\n";
}

/// max |got - want| / max |want| over the logits: the bound the tests above hold the lane to.
double max_rel(const SeqResult& got, const SeqResult& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.logits.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(got.logits.at(i)) - want.logits[i]));
    den = std::max(den, std::fabs(static_cast<double>(want.logits[i])));
  }
  return num / den;
}

// Gemma 3's local layers (sliding window 8) on the compiled lane: a prefill of 333 tokens (the
// flash kernel's blocks start at the key tile their windows reach), a second chunk at position 333
// (the K/V pack copies from the window's first row on, the first key tile is past 0), and decode
// steps (split-KV chunks over the last 8 positions only), each within the bf16 bound of the CPU
// reference (2e-2, as above).
TEST(CompiledLane, Gemma3SlidingWindowPrefillChunksAndDecodeMatchReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/fixtures/tiny-gemma3");
  auto lane = make_lane("compiled", dir, {.max_seq = 512});
  auto ref = make_lane("cpu", dir, {.max_seq = 512});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(dir.config.vocab_size - 1));
  std::vector<int32_t> prompt(400);
  for (auto& t : prompt) t = tok(rng);
  const std::span<const int32_t> first(prompt.data(), 333), second(prompt.data() + 333, prompt.size() - 333);
  SeqResult got = lg::testing::step_alone(*lane, first, 0, true), want = lg::testing::step_alone(*ref, first, 0, true);
  EXPECT_LT(max_rel(got, want), 2e-2) << "prefill of 333 tokens";
  got = lg::testing::step_alone(*lane, second, 333, true);
  want = lg::testing::step_alone(*ref, second, 333, true);
  EXPECT_LT(max_rel(got, want), 2e-2) << "a second prefill chunk at position 333";
  for (int64_t s = 0; s < 12; ++s) {
    const std::vector<int32_t> next{want.argmax};
    got = lg::testing::step_alone(*lane, next, static_cast<int64_t>(prompt.size()) + s, true);
    want = lg::testing::step_alone(*ref, next, static_cast<int64_t>(prompt.size()) + s, true);
    EXPECT_LT(max_rel(got, want), 2e-2) << "decode step " << s;
  }
}

// Decode at a long context: a 3,000-token prompt (two prefill chunks of the lane's 2,048-token
// budget), then decode steps whose split-KV attention runs its most splits (32 at this context)
// with chunks of 128 positions: 24 chunks with keys, merged by the last block of each (token,
// head group) in three batches of 8. Alone (the bucket-1 graph, the split-KV kernel's one-row
// form: three blocks an SM, the queries from shared memory) the logits stay within the bf16
// bound of the fp32 CPU reference that the tests above use (2e-2: the attention output is a convex
// combination of bf16-rounded V rows with weights from bf16-rounded K rows, whose relative error
// does not grow with the number of positions). Then it and two more sequences, at 2,000 and 700
// positions, decode together (the bucket-4 graph, with a pad row), each row held to the reference
// by the same bound (the path of its GEMMs, over bf16 rows, is the prefill's, held to 2e-2 above).
TEST(CompiledLane, LongContextDecodeMatchesReference) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto dir = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  // The one-row split-KV form for the decodes alone (its rule leaves the 22M model's group of 2
  // out); the three together run the narrow form.
  ASSERT_EQ(setenv("LG_COMPILED_ATTN_ONE_ROW", "1", 1), 0);
  auto lane = make_lane("compiled", dir, {.max_seq = 4096});
  unsetenv("LG_COMPILED_ATTN_ONE_ROW");
  auto ref = make_lane("cpu", dir, {.max_seq = 4096});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(dir.config.vocab_size - 1));
  const int64_t lengths[] = {3000, 2000, 700};
  constexpr int kDecodes = 4;
  std::vector<std::vector<int32_t>> feed(3);
  std::vector<std::vector<SeqResult>> want(3);  // the reference: after the prompt, after each decode
  double worst_alone = 0;
  for (size_t i = 0; i < 3; ++i) {
    feed[i].resize(static_cast<size_t>(lengths[i]));
    for (auto& t : feed[i]) t = tok(rng);
    runtime::SoloSequence r(*ref);
    want[i].push_back(r.feed(feed[i], true));
    for (int k = 0; k < kDecodes; ++k) {
      feed[i].push_back(want[i].back().argmax);
      want[i].push_back(r.feed(std::span<const int32_t>(&feed[i].back(), 1), true));
    }
  }
  {  // the first alone
    runtime::SoloSequence a(*lane);
    const auto n = static_cast<size_t>(lengths[0]);
    EXPECT_LT(max_rel(a.feed(std::span<const int32_t>(feed[0].data(), n), true), want[0][0]), 2e-2)
        << "prefill of " << n << " tokens";
    for (int k = 0; k < kDecodes; ++k) {
      const double e = max_rel(a.feed(std::span<const int32_t>(&feed[0][n + static_cast<size_t>(k)], 1), true),
                               want[0][static_cast<size_t>(k + 1)]);
      worst_alone = std::max(worst_alone, e);
      EXPECT_LT(e, 2e-2) << "decode step " << k << " at position " << lengths[0] + k;
    }
  }
  // The three together, from their prompts: block tables from one allocator.
  runtime::BlockManager blocks(lane->limits().num_blocks, lane->limits().block_size);
  std::vector<std::unique_ptr<runtime::SoloSequence>> seqs;
  for (size_t i = 0; i < 3; ++i) {
    seqs.push_back(std::make_unique<runtime::SoloSequence>(*lane, &blocks));
    seqs[i]->feed(std::span<const int32_t>(feed[i].data(), static_cast<size_t>(lengths[i])), false);
  }
  double worst_batched = 0;
  for (int k = 0; k < kDecodes; ++k) {
    std::vector<SeqStep> batch;
    for (size_t i = 0; i < 3; ++i)
      batch.push_back(seqs[i]->next(std::span<const int32_t>(&feed[i][static_cast<size_t>(lengths[i] + k)], 1), true));
    const std::vector<SeqResult> out = lane->step(batch);
    for (size_t i = 0; i < 3; ++i) {
      seqs[i]->advance(1);
      const double e = max_rel(out[i], want[i][static_cast<size_t>(k + 1)]);
      worst_batched = std::max(worst_batched, e);
      EXPECT_LT(e, 2e-2) << "sequence " << i << " (" << lengths[i] << " positions) batched, decode step " << k;
    }
  }
  std::cout << "long context decode, logits rel err from the reference: alone at 3000 positions " << worst_alone
            << ", 3 sequences together " << worst_batched << "\n";
}

}  // namespace
}  // namespace lg
