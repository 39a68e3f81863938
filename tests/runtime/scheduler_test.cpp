// The scheduler alone, over a lane that models a paged KV cache exactly: every step writes each
// token into the pool slot its block table names, and a sequence's next token is a hash of the
// tokens read back through its table at positions 0 .. its last. A wrong block, a stale slot, a
// block shared by two sequences or a preemption that recomputes the wrong tokens changes the
// hash, so "every finished request generates what it generates alone" checks the scheduler's
// block bookkeeping, not just its counting. Seeded random arrivals, cancellations, small pools
// (preemptions) and step budgets; no block may leak.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

constexpr int32_t kVocab = 97;

class PoolLane : public Lane {
 public:
  PoolLane(int64_t max_seq, int64_t pool_tokens, int64_t block_size, int64_t max_batch, int64_t max_tokens) {
    LaneOptions o;
    o.kv_tokens = pool_tokens;
    o.block_size = block_size;
    o.max_batch = max_batch;
    o.max_tokens = max_tokens;
    limits_ = resolve_limits(o, max_seq, pool_tokens);
    pool_.assign(static_cast<size_t>(limits_.pool_tokens()), -1);
  }
  std::string name() const override { return "pool"; }
  Provenance provenance() const override { return Reference{}; }
  const LaneLimits& limits() const override { return limits_; }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    const FlatBatch f = flatten(batch, limits_);
    const int64_t bs = limits_.block_size, MB = limits_.blocks_per_seq();
    auto slot = [&](int64_t b, int64_t p) {
      return f.block_table[static_cast<size_t>(b * MB + p / bs)] * bs + p % bs;
    };
    for (int64_t t = 0; t < f.T; ++t) pool_[static_cast<size_t>(slot(f.seq[t], f.pos[t]))] = f.tokens[t];
    std::vector<SeqResult> out;
    for (int64_t b = 0; b < f.B; ++b) {
      uint64_t h = 1469598103934665603ull;
      for (int64_t p = 0; p <= f.pos[static_cast<size_t>(f.rows[b])]; ++p) {
        const int32_t tok = pool_[static_cast<size_t>(slot(b, p))];
        if (tok < 0) throw Error("read an unwritten slot");
        h = (h ^ static_cast<uint64_t>(tok + 1)) * 1099511628211ull;
      }
      SeqResult r;
      r.argmax = static_cast<int32_t>(h % kVocab);
      if (batch[static_cast<size_t>(b)].want_logits) {
        r.logits.assign(kVocab, 0.0f);
        for (int32_t v = 0; v < kVocab; ++v) r.logits[v] = static_cast<float>((h >> (v % 40)) % 7);
        r.logits[r.argmax] = 10.0f;
      }
      out.push_back(std::move(r));
    }
    ++steps;
    return out;
  }
  int64_t steps = 0;

 private:
  LaneLimits limits_;
  std::vector<int32_t> pool_;
};

struct Spec {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  int64_t arrive = 0;       ///< the step it is submitted before
  int64_t cancel_after = -1;  ///< tokens after which its client goes away (-1: never)
};

TEST(Scheduler, RandomArrivalsCancellationsAndPreemptionsGiveEachRequestItsSoloTokens) {
  int64_t preemptions = 0, cancelled = 0, finished = 0, max_running = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
    const int64_t bs = uni(1, 8), max_seq = 96;
    // Small pools: some seeds cannot hold all their requests at once, so they preempt.
    const int64_t pool = uni(max_seq, 5 * max_seq);
    PoolLane lane(max_seq, pool, bs, uni(1, 12), uni(8, 64));
    const int64_t n = uni(1, 14);
    std::vector<Spec> specs(static_cast<size_t>(n));
    for (auto& s : specs) {
      s.prompt.resize(static_cast<size_t>(uni(1, 50)));
      for (auto& t : s.prompt) t = static_cast<int32_t>(uni(0, kVocab - 1));
      s.options.max_new_tokens = uni(1, 40);
      if (uni(0, 4) == 0) s.options.eos_ids = {static_cast<int64_t>(uni(0, kVocab - 1))};
      if (uni(0, 3) == 0) {
        s.options.sampling.temperature = 0.7;
        s.options.sampling.seed = static_cast<uint64_t>(uni(0, 1000));
      }
      s.arrive = uni(0, 30);
      if (uni(0, 5) == 0) s.cancel_after = uni(0, 10);
    }
    // Alone: a fresh lane and scheduler per request.
    std::vector<std::vector<int32_t>> solo;
    for (const auto& s : specs) {
      PoolLane alone(max_seq, max_seq, bs, 1, 64);
      solo.push_back(generate(alone, s.prompt, s.options).tokens);
    }
    Scheduler sched(lane);
    std::vector<Generation> got(specs.size());
    std::vector<int> done(specs.size(), 0);
    std::vector<int64_t> seen(specs.size(), 0);
    size_t submitted = 0;
    std::vector<size_t> order(specs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return specs[a].arrive < specs[b].arrive; });
    for (int64_t step = 0; submitted < specs.size() || sched.waiting() + sched.running() > 0; ++step) {
      while (submitted < specs.size() && specs[order[submitted]].arrive <= step) {
        const size_t i = order[submitted++];
        Request r;
        r.prompt = specs[i].prompt;
        r.options = specs[i].options;
        r.options.on_token = [&seen, i](int32_t) { ++seen[i]; };
        if (specs[i].cancel_after >= 0)
          r.options.should_stop = [&seen, &specs, i] { return seen[i] >= specs[i].cancel_after; };
        r.on_done = [&got, &done, i](Generation&& g, const std::string& error) {
          EXPECT_EQ(error, "");
          got[i] = std::move(g);
          ++done[i];
        };
        sched.submit(std::move(r));
      }
      max_running = std::max(max_running, sched.running());
      sched.step();
      ASSERT_LT(step, 100000) << "seed " << seed << ": the scheduler makes no progress";
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      ASSERT_EQ(done[i], 1) << "seed " << seed << " request " << i << " finished " << done[i] << " times";
      const auto& want = solo[i];
      const auto& have = got[i].tokens;
      if (specs[i].cancel_after >= 0 && got[i].stats.stop == "caller") {
        // Cancelled: a prefix of its solo tokens (none when cancelled while it waited).
        ++cancelled;
        ASSERT_LE(have.size(), want.size());
        EXPECT_TRUE(std::equal(have.begin(), have.end(), want.begin())) << "seed " << seed << " request " << i;
      } else {
        EXPECT_EQ(have, want) << "seed " << seed << " request " << i;
        ++finished;
      }
    }
    EXPECT_EQ(sched.blocks().used_blocks(), 0) << "seed " << seed << ": blocks leaked";
    preemptions += sched.preemptions();
  }
  std::cout << "[ scheduler ] " << finished << " requests finished as alone, " << cancelled << " cancelled, "
            << preemptions << " preemptions, up to " << max_running << " running at once\n";
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(cancelled, 0);
  EXPECT_GE(max_running, 6);
}

TEST(Scheduler, RefusesWhatCanNeverRun) {
  PoolLane lane(32, 64, 4, 8, 16);
  Scheduler sched(lane);
  Request r;
  r.prompt.assign(33, 1);
  try {
    sched.submit(r);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("33 tokens, more than the context of 32"), std::string::npos) << e.what();
  }
  // A pool below one context: a lone request could only preempt itself, forever. No lane is
  // made with one (runtime/step.h, resolve_limits), so no scheduler ever sees it.
  EXPECT_THROW(PoolLane(64, 16, 4, 8, 16), Error);
  EXPECT_FALSE(sched.step());
}

// A prompt longer than the step budget is prefilled in chunks while a running request keeps
// decoding one token every step.
TEST(Scheduler, LongPromptsArePrefilledInChunksBesideRunningDecodes) {
  PoolLane lane(256, 1024, 16, 8, 32);
  Scheduler sched(lane);
  int64_t short_tokens = 0;
  Request a;
  a.prompt = {1, 2, 3};
  a.options.max_new_tokens = 20;
  a.options.on_token = [&](int32_t) { ++short_tokens; };
  sched.submit(std::move(a));
  sched.step();  // a's prefill and first token
  ASSERT_EQ(short_tokens, 1);
  Request b;
  b.prompt.assign(200, 5);
  b.options.max_new_tokens = 1;
  bool b_done = false;
  b.on_done = [&](Generation&&, const std::string&) { b_done = true; };
  sched.submit(std::move(b));
  int64_t steps = 0;
  while (!b_done) {
    sched.step();
    ++steps;
  }
  // 200 tokens at 31 a step (one of the 32 goes to a's decode): 7 steps, and a decoded in each.
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(short_tokens, 1 + 7);
}

}  // namespace
}  // namespace lg::runtime
