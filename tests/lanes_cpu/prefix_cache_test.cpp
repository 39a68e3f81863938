// Prefix caching on the cpu lane (issue 14): a sequence whose block table starts with blocks
// another sequence wrote reads them as its own (the same logits as running alone), and the
// scheduler, given the same long prompt twice, computes only its last tokens the second time and
// generates the same greedy tokens.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/batch_schedules.h"
#include "common/counting_lane.h"
#include "common/repo_dirs.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/kv_blocks.h"
#include "runtime/scheduler.h"
#include "runtime/solo_sequence.h"

namespace lg {
namespace {


std::vector<float> top2(const std::vector<float>& logits) {
  std::vector<float> t(logits);
  std::partial_sort(t.begin(), t.begin() + 2, t.end(), std::greater<float>());
  return {t[0], t[1]};
}

// The logits of `got` against `want` (run alone): relative error < 1e-5 (the same fp32
// arithmetic, except that a GEMM over other rows may sum in another order inside BLAS, as in
// batch_test.cpp), and the same argmax unless the alone run's top-2 margin is below 1e-4.
void expect_as_alone(const SeqResult& got, const SeqResult& want, const std::string& what) {
  EXPECT_LT(testing::rel_err(got.logits, want.logits), 1e-5) << what;
  const auto t = top2(want.logits);
  if (t[0] - t[1] > 1e-4) {
    EXPECT_EQ(got.argmax, want.argmax) << what;
  }
}

// Sequence a is prefilled; then b, whose first full_blocks blocks of tokens are a's, is given a
// table that starts with a's blocks and is fed only the positions after them, in a step beside
// a's decode (which writes a's partial last block); then both decode once more.
void shared_blocks_read_as_own(const std::string& dir_path, int64_t bs, int32_t lo, int32_t hi) {
  const model::ModelDir dir = model::ModelDir::open(dir_path);
  LaneOptions o;
  o.max_seq = 128;
  o.block_size = bs;
  o.kv_tokens = 8 * 128;
  o.max_batch = 4;
  o.max_tokens = 128;
  auto lane = make_cpu_lane(dir, o);
  runtime::BlockManager blocks(lane->limits().num_blocks, bs);
  std::mt19937_64 rng(static_cast<uint64_t>(bs));
  auto random_ids = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = std::uniform_int_distribution<int32_t>(lo, hi)(rng);
    return t;
  };
  const int64_t full_blocks = 3;
  std::vector<int32_t> a = random_ids(full_blocks * bs + 3);
  std::vector<int32_t> b(a.begin(), a.begin() + full_blocks * bs);
  const auto tail = random_ids(7);
  b.insert(b.end(), tail.begin(), tail.end());

  // Alone: each sequence from position 0 in blocks of its own; its prompt, then two decodes.
  auto alone = [&](std::vector<int32_t> toks) {
    runtime::SoloSequence s(*lane, &blocks);
    std::vector<SeqResult> out{s.feed(toks, true)};
    for (int k = 0; k < 2; ++k) {
      toks.push_back(out.back().argmax);
      out.push_back(s.feed(std::span<const int32_t>(&toks.back(), 1), true));
    }
    return std::make_pair(toks, out);
  };
  const auto [a_toks, a_alone] = alone(a);
  const auto [b_toks, b_alone] = alone(b);

  std::vector<int32_t> ta, tb;
  auto seq_step = [](const std::vector<int32_t>& toks, int64_t from, int64_t n, const std::vector<int32_t>& table) {
    SeqStep s;
    s.tokens = std::span<const int32_t>(toks.data() + from, static_cast<size_t>(n));
    s.start_pos = from;
    s.blocks = table;
    s.want_logits = true;
    return s;
  };
  const auto a_len = static_cast<int64_t>(a.size()), b_len = static_cast<int64_t>(b.size());
  ASSERT_TRUE(blocks.grow(ta, a_len + 1));
  {
    const SeqStep s = seq_step(a_toks, 0, a_len, ta);
    expect_as_alone(lane->step(std::span<const SeqStep>(&s, 1)).at(0), a_alone[0], "a's prompt");
  }
  tb.assign(ta.begin(), ta.begin() + full_blocks);  // read-only: b writes from position full_blocks * bs on
  ASSERT_TRUE(blocks.grow(tb, b_len + 2));
  for (int64_t k = 0; k < 2; ++k) {
    std::vector<SeqStep> batch;
    ASSERT_TRUE(blocks.grow(ta, a_len + k + 1));
    batch.push_back(seq_step(a_toks, a_len + k, 1, ta));  // a's decode, in its own last block
    batch.push_back(k == 0 ? seq_step(b_toks, full_blocks * bs, b_len - full_blocks * bs, tb)
                           : seq_step(b_toks, b_len, 1, tb));
    const auto out = lane->step(batch);
    expect_as_alone(out.at(0), a_alone[static_cast<size_t>(k + 1)], "a's decode " + std::to_string(k));
    expect_as_alone(out.at(1), b_alone[static_cast<size_t>(k)], "b's step " + std::to_string(k) + " over a's blocks");
  }
  blocks.release(ta);
  // b borrowed a's blocks without a reference of its own (this test drives the lane by hand):
  // it gives back only the blocks it took.
  std::vector<int32_t> own(tb.begin() + full_blocks, tb.end());
  blocks.release(own);
  EXPECT_EQ(blocks.used_blocks(), 0);
}

TEST(PrefixCacheCpu, TinyQwen3ReadsAnotherSequencesBlocksAsItsOwn) {
  shared_blocks_read_as_own(kShared + "/fixtures/tiny-qwen3", 4, 3, 510);
}

TEST(PrefixCacheCpu, Pycode22mReadsAnotherSequencesBlocksAsItsOwn) {
  shared_blocks_read_as_own(kSource + "/models/qwen3-pycode-22m", 16, 3, 151000);
}

using testing::CountingLane;

// ~1,500 tokens of Python: the golden fixture's prompts and the greedy tokens transformers
// generated after them, one case after another, repeated.
std::vector<int32_t> long_python_prompt(int64_t n) {
  std::ifstream f(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  const auto golden = nlohmann::json::parse(f);
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n)
    for (const auto& c : golden.at("cases")) {
      for (const auto& key : {"prompt_ids", "fp32_cpu_greedy_ids"})
        for (const auto& id : c.at(key)) out.push_back(id.get<int32_t>());
    }
  out.resize(static_cast<size_t>(n));
  return out;
}

TEST(PrefixCacheCpu, Pycode22mRepeatedLongPromptComputesOnlyItsTailAndGeneratesTheSame) {
  const model::ModelDir dir = model::ModelDir::open(kSource + "/models/qwen3-pycode-22m");
  LaneOptions o;
  o.max_seq = 2048;
  auto cpu = make_cpu_lane(dir, o);
  CountingLane lane(*cpu);
  const int64_t len = 1500, bs = lane.limits().block_size, new_tokens = 16;
  const auto prompt = long_python_prompt(len);
  auto request = [&](std::vector<std::vector<int32_t>>& got) {
    runtime::Request r;
    r.prompt = prompt;
    r.options.max_new_tokens = new_tokens;
    r.on_done = [&got](runtime::Generation&& g, const std::string& error) {
      EXPECT_EQ(error, "");
      got.push_back(g.tokens);
    };
    return r;
  };
  // Without the cache first (its own scheduler, done before the next one uses the pool).
  std::vector<std::vector<int32_t>> cold;
  {
    runtime::SchedulerOptions off;
    off.prefix_cache = false;
    runtime::Scheduler sched(lane, off);
    sched.submit(request(cold));
    sched.submit(request(cold));
    sched.run();
    EXPECT_EQ(sched.stats().prompt_tokens_computed, 2 * len);
    EXPECT_EQ(sched.stats().prefix_cache_hits, 0);
  }
  runtime::Scheduler sched(lane);
  std::vector<std::vector<int32_t>> got;
  std::vector<int64_t> fed;
  std::vector<double> seconds;
  for (int run = 0; run < 2; ++run) {
    const int64_t before = lane.fed;
    const auto t0 = std::chrono::steady_clock::now();
    sched.submit(request(got));
    sched.run();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    fed.push_back(lane.fed - before);
  }
  const runtime::SchedulerStats st = sched.stats();
  std::cout << "[ prefix cache ] a " << len << "-token prompt, " << new_tokens << " greedy tokens: the lane computed "
            << fed[0] << " tokens the first time (" << seconds[0] << " s), " << fed[1] << " the second (" << seconds[1]
            << " s); " << st.prefix_cache_hits << " of " << st.prefix_cache_queries << " prompt tokens cached\n";
  ASSERT_EQ(cold.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].size(), static_cast<size_t>(new_tokens));
  EXPECT_EQ(got[0], cold[0]);
  EXPECT_EQ(got[1], got[0]);
  // All but the prompt's last partial block (or its last block, when full) comes from the cache.
  const int64_t cached = (len - 1) / bs * bs;
  EXPECT_EQ(fed[0], len + new_tokens - 1);
  EXPECT_EQ(fed[1], len - cached + new_tokens - 1);
  EXPECT_LT(fed[1] * 20, fed[0]);
  EXPECT_EQ(st.prefix_cache_queries, 2 * len);
  EXPECT_EQ(st.prefix_cache_hits, cached);
  EXPECT_EQ(st.prompt_tokens_computed, 2 * len - cached);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_GT(st.kv_blocks_cached_free, 0);
}

}  // namespace
}  // namespace lg
