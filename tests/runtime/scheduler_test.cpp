// The scheduler alone, over a lane that models a paged KV cache exactly (tests/common/pool_lane.h):
// "every finished request generates what it generates alone" checks the scheduler's block
// bookkeeping, not just its counting. Seeded random arrivals, cancellations, small pools
// (preemptions) and step budgets; no block may leak. With shared prompt prefixes the prefix cache
// hands requests blocks other requests wrote: the lane also checks that no step writes into a
// block another sequence holds or the cache has named.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>

#include "common/pool_lane.h"
#include "runtime/generate.h"
#include "runtime/kv_blocks.h"
#include "runtime/scheduler.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

using testing::kPoolLaneVocab;
using testing::PoolLane;
constexpr int32_t kVocab = kPoolLaneVocab;

struct Spec {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  int64_t arrive = 0;       ///< the step it is submitted before
  int64_t cancel_after = -1;  ///< tokens after which its client goes away (-1: never)
};

struct RandomTotals {
  int64_t preemptions = 0, cancelled = 0, finished = 0, max_running = 0;
  int64_t queries = 0, hits = 0, evictions = 0, cached_left = 0;
  int64_t penalised = 0;  ///< requests with a penalty
};

/// Prompts for one seed: random ones, or (with `shared`) mostly beginnings of a few stems,
/// sometimes cut at a block boundary, with their own tails, and some exact repeats.
std::vector<std::vector<int32_t>> make_prompts(std::mt19937_64& rng, int64_t n, int64_t bs, bool shared) {
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  auto random_tokens = [&](int64_t len) {
    std::vector<int32_t> t(static_cast<size_t>(len));
    for (auto& x : t) x = static_cast<int32_t>(uni(0, kVocab - 1));
    return t;
  };
  std::vector<std::vector<int32_t>> stems;
  for (int64_t k = uni(1, 3); k-- > 0;) stems.push_back(random_tokens(uni(1, 60)));
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t kind = shared ? uni(0, 5) : 0;
    if (kind == 0) {
      out.push_back(random_tokens(uni(1, 50)));
    } else if (kind == 1 && !out.empty()) {
      out.push_back(out[static_cast<size_t>(uni(0, static_cast<int64_t>(out.size()) - 1))]);
    } else {
      const auto& stem = stems[static_cast<size_t>(uni(0, static_cast<int64_t>(stems.size()) - 1))];
      int64_t len = uni(1, static_cast<int64_t>(stem.size()));
      if (uni(0, 1) == 0 && len >= bs) len -= len % bs;
      std::vector<int32_t> p(stem.begin(), stem.begin() + len);
      const auto tail = random_tokens(uni(0, 15));
      p.insert(p.end(), tail.begin(), tail.end());
      out.push_back(p);
    }
  }
  return out;
}

/// Seeds 0 .. seeds-1 of random arrivals, cancellations and pools; every finished request must
/// generate its solo tokens (a cancelled one a prefix of them), no block may leak, and the
/// scheduler's counters must agree with what the lane saw.
RandomTotals run_random_schedules(uint64_t seeds, bool shared, bool prefix_cache) {
  RandomTotals tot;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(seed);
    auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
    const int64_t bs = uni(1, 8), max_seq = 96;
    // Small pools: some seeds cannot hold all their requests at once, so they preempt.
    const int64_t pool = uni(max_seq, 5 * max_seq);
    PoolLane lane(max_seq, pool, bs, uni(1, 12), uni(8, 64));
    // Sampled tokens drawn by the lane on even seeds, by the host on odd ones; the solo runs draw
    // the other way: the two paths must draw the same tokens.
    lane.draws_tokens = seed % 2 == 0;
    const int64_t n = uni(1, 14);
    const auto prompts = make_prompts(rng, n, bs, shared);
    std::vector<Spec> specs(static_cast<size_t>(n));
    for (size_t i = 0; i < specs.size(); ++i) {
      Spec& s = specs[i];
      s.prompt = prompts[i];
      s.options.max_new_tokens = uni(1, 40);
      if (uni(0, 4) == 0) s.options.eos_ids = {static_cast<int64_t>(uni(0, kVocab - 1))};
      if (uni(0, 3) == 0) {
        s.options.sampling.temperature = 0.7;
        s.options.sampling.seed = static_cast<uint64_t>(uni(0, 1000));
      }
      s.arrive = uni(0, 30);
      if (uni(0, 5) == 0) s.cancel_after = uni(0, 10);
    }
    // Penalties on some requests, greedy or sampled, drawn from a stream of their own so that the
    // schedules above stay those of every earlier run. A penalised greedy request needs its logits
    // row where its plain neighbours take the lane's argmax; each must still get its solo tokens.
    std::mt19937_64 prng(seed ^ 0x9e3779b97f4a7c15ull);
    for (Spec& s : specs) {
      const uint64_t kind = prng() % 4;
      if (kind == 0) s.options.sampling.penalties.repetition = 2.0;  // 10 / 2 falls below the other logits
      if (kind == 1) s.options.sampling.penalties = {1.0, 1.5, 1.0};
      if (kind == 2) s.options.sampling.min_p = 0.5;
      tot.penalised += kind <= 1;
    }
    // Alone: a fresh lane and scheduler per request.
    std::vector<std::vector<int32_t>> solo;
    for (const auto& s : specs) {
      PoolLane alone(max_seq, max_seq, bs, 1, 64);
      alone.draws_tokens = !lane.draws_tokens;
      solo.push_back(generate(alone, s.prompt, s.options).tokens);
    }
    SchedulerOptions so;
    so.prefix_cache = prefix_cache;
    Scheduler sched(lane, so);
    lane.watch = &sched.blocks();
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
      tot.max_running = std::max(tot.max_running, sched.running());
      sched.step();
      if (::testing::Test::HasFailure()) return tot;
      EXPECT_LT(step, 100000) << "seed " << seed << ": the scheduler makes no progress";
    }
    int64_t generated = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(done[i], 1) << "seed " << seed << " request " << i << " finished " << done[i] << " times";
      const auto& want = solo[i];
      const auto& have = got[i].tokens;
      generated += static_cast<int64_t>(have.size());
      if (specs[i].cancel_after >= 0 && got[i].stats.stop == "caller") {
        // Cancelled: a prefix of its solo tokens (none when cancelled while it waited).
        ++tot.cancelled;
        EXPECT_LE(have.size(), want.size());
        EXPECT_TRUE(std::equal(have.begin(), have.begin() + static_cast<std::ptrdiff_t>(std::min(have.size(), want.size())),
                               want.begin()))
            << "seed " << seed << " request " << i;
      } else {
        EXPECT_EQ(have, want) << "seed " << seed << " request " << i;
        ++tot.finished;
      }
    }
    const SchedulerStats st = sched.stats();
    EXPECT_EQ(st.kv_blocks_used, 0) << "seed " << seed << ": blocks leaked";
    EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total) << "seed " << seed;
    EXPECT_EQ(st.running + st.waiting, 0);
    EXPECT_EQ(st.tokens_computed, lane.tokens_fed) << "seed " << seed;
    EXPECT_EQ(st.steps, lane.steps) << "seed " << seed;
    EXPECT_EQ(st.generated_tokens, generated) << "seed " << seed;
    EXPECT_EQ(st.requests_finished, n) << "seed " << seed;
    EXPECT_LE(st.prefix_cache_hits, st.prefix_cache_queries) << "seed " << seed;
    if (!prefix_cache) {
      EXPECT_EQ(st.kv_blocks_cached_free + st.prefix_cache_queries + st.prefix_cache_evictions, 0);
    }
    if (::testing::Test::HasFailure()) return tot;
    tot.preemptions += st.preemptions;
    tot.queries += st.prefix_cache_queries;
    tot.hits += st.prefix_cache_hits;
    tot.evictions += st.prefix_cache_evictions;
    tot.cached_left += st.kv_blocks_cached_free;
  }
  std::cout << "[ scheduler ] " << (shared ? "shared prefixes" : "random prompts") << ", prefix cache "
            << (prefix_cache ? "on" : "off") << ": " << tot.finished << " requests finished as alone, " << tot.cancelled
            << " cancelled, " << tot.preemptions << " preemptions, up to " << tot.max_running << " running at once; "
            << tot.hits << " of " << tot.queries << " prompt tokens found cached, " << tot.evictions
            << " cached blocks evicted\n";
  return tot;
}

TEST(Scheduler, RandomArrivalsCancellationsAndPreemptionsGiveEachRequestItsSoloTokens) {
  const RandomTotals t = run_random_schedules(300, false, true);
  EXPECT_GT(t.penalised, 300);
  EXPECT_GT(t.preemptions, 0);
  EXPECT_GT(t.cancelled, 0);
  EXPECT_GE(t.max_running, 6);
}

// Shared prefixes: requests take blocks other requests wrote (hits), under small pools that
// evict cached blocks and preempt, and each still generates exactly what it does alone.
TEST(Scheduler, SharedPrefixesHitTheCacheAndEachRequestStillGetsItsSoloTokens) {
  const RandomTotals t = run_random_schedules(300, true, true);
  EXPECT_GT(t.preemptions, 0);
  EXPECT_GT(t.cancelled, 0);
  EXPECT_GT(t.hits, t.queries / 10);
  EXPECT_GT(t.evictions, 0);
  EXPECT_GT(t.cached_left, 0);  // finished requests' blocks stay cached, free
}

TEST(Scheduler, SharedPrefixesWithoutThePrefixCacheComputeEverything) {
  const RandomTotals t = run_random_schedules(100, true, false);
  EXPECT_EQ(t.hits, 0);
  EXPECT_GT(t.preemptions, 0);
}

// A prompt cached to its end still computes its last token (its logits pick the next one):
// when the prompt ends a block, that whole block is recomputed, into a block of its own.
TEST(Scheduler, ARepeatedPromptComputesOnlyItsLastBlockOrTail) {
  for (const int64_t len : {32, 35, 8, 5}) {
    PoolLane lane(64, 256, 8, 4, 64);
    Scheduler sched(lane);
    lane.watch = &sched.blocks();
    std::vector<int32_t> prompt(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) prompt[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 11) % kVocab);
    std::vector<std::vector<int32_t>> out;
    for (int run = 0; run < 2; ++run) {
      Request r;
      r.prompt = prompt;
      r.options.max_new_tokens = 5;
      r.on_done = [&](Generation&& g, const std::string&) { out.push_back(g.tokens); };
      sched.submit(std::move(r));
      sched.run();
    }
    const SchedulerStats st = sched.stats();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0], out[1]) << len;
    EXPECT_EQ(out[0].size(), 5u);
    const int64_t cached = (len - 1) / 8 * 8;  // 24, 32, 0, 0
    EXPECT_EQ(st.prefix_cache_queries, 2 * len);
    EXPECT_EQ(st.prefix_cache_hits, cached) << len;
    EXPECT_EQ(st.prompt_tokens_computed, 2 * len - cached) << len;
    EXPECT_EQ(lane.tokens_fed, 2 * (len + 4) - cached) << len;
    EXPECT_EQ(st.generated_tokens, 10);
    EXPECT_EQ(st.kv_blocks_used, 0);
  }
}

// Requests that start with blocks another request's prefill is writing wait for them to be named
// instead of computing them again: n choices of one prompt, a system prompt many requests begin
// with at once. Each still gets its solo tokens; the ones behind a waiting request go on.
TEST(Scheduler, ARequestWaitsForTheBlocksARunningPrefillIsWriting) {
  const auto prompt_of = [](int64_t len, int32_t salt) {
    std::vector<int32_t> p(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + salt) % kVocab);
    return p;
  };
  struct Run {
    std::vector<std::vector<int32_t>> out;
    SchedulerStats st;
  };
  const auto run = [&](const std::vector<std::vector<int32_t>>& prompts, bool cache) {
    PoolLane lane(128, 1024, 8, 16, 256);
    Scheduler sched(lane, SchedulerOptions{.prefix_cache = cache});
    lane.watch = &sched.blocks();
    Run r;
    r.out.resize(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      Request q;
      q.prompt = prompts[i];
      q.options.max_new_tokens = 6;
      q.on_done = [&r, i](Generation&& g, const std::string&) { r.out[i] = g.tokens; };
      sched.submit(std::move(q));
    }
    sched.run();
    r.st = sched.stats();
    EXPECT_EQ(r.st.kv_blocks_used, 0);
    return r;
  };
  // Eight choices of a 35-token prompt: the first computes it, the others its last 3 tokens
  // (4 full blocks of 8 shared).
  const std::vector<std::vector<int32_t>> same(8, prompt_of(35, 11));
  const Run shared = run(same, true), alone = run(same, false);
  EXPECT_EQ(shared.out, alone.out);
  EXPECT_EQ(shared.st.prompt_tokens_computed, 35 + 7 * 3);
  EXPECT_EQ(alone.st.prompt_tokens_computed, 8 * 35);
  // A 40-token system prompt and tails of their own: 45 computed, then 5 for each of the others.
  std::vector<std::vector<int32_t>> tails;
  for (int32_t k = 0; k < 4; ++k) {
    tails.push_back(prompt_of(40, 5));
    const auto tail = prompt_of(5, 60 + k);
    tails.back().insert(tails.back().end(), tail.begin(), tail.end());
  }
  const Run system = run(tails, true);
  EXPECT_EQ(system.out, run(tails, false).out);
  EXPECT_EQ(system.st.prompt_tokens_computed, 45 + 3 * 5);

  // The one behind a waiting request is admitted at once; the waiting one at the next step.
  PoolLane lane(128, 1024, 8, 16, 32);
  Scheduler sched(lane);
  std::vector<int64_t> first_token_step(3, -1);
  int64_t steps = 0;
  for (const auto& [k, p] : std::vector<std::pair<int, std::vector<int32_t>>>{
           {0, prompt_of(20, 3)}, {1, prompt_of(20, 3)}, {2, prompt_of(5, 9)}}) {
    Request q;
    q.prompt = p;
    q.options.max_new_tokens = 3;
    q.options.on_token = [&, k](int32_t) {
      if (first_token_step[static_cast<size_t>(k)] < 0) first_token_step[static_cast<size_t>(k)] = steps;
    };
    sched.submit(std::move(q));
  }
  while (sched.step()) ++steps;
  EXPECT_EQ(first_token_step, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(sched.stats().prompt_tokens_computed, 20 + 4 + 5);

  // A decoding request's blocks never hold one back: a prompt that continues another's output
  // (a chat's next turn) starts at the next step though that block is still filling.
  PoolLane lane2(128, 1024, 8, 16, 64);
  Scheduler sched2(lane2);
  std::vector<int32_t> first_out;
  Request a;
  a.prompt = prompt_of(12, 4);
  a.options.max_new_tokens = 8;
  a.options.on_token = [&](int32_t t) { first_out.push_back(t); };
  sched2.submit(std::move(a));
  sched2.step();
  sched2.step();
  ASSERT_EQ(first_out.size(), 2u);
  Request b;
  b.prompt = prompt_of(12, 4);
  b.prompt.insert(b.prompt.end(), first_out.begin(), first_out.end());
  b.options.max_new_tokens = 2;
  sched2.submit(std::move(b));
  sched2.step();
  EXPECT_EQ(sched2.running(), 2);
  EXPECT_EQ(sched2.waiting(), 0);
  sched2.run();
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
  // A negative id can never run (and a penalised request's history is read before the lane sees it).
  r.prompt = {5, -3, 7};
  r.options.sampling.penalties.repetition = 1.2;
  try {
    sched.submit(r);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the prompt's token 1 is -3"), std::string::npos) << e.what();
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

// A request whose client went away while it waited behind others used to stay queued until it
// reached the front (and then, if it had been preempted, was recomputed to make one more token):
// it kept lg serve's waiting count up (503 queue_full for the live ones) and, unstreamed, its HTTP
// thread. Now it leaves at the next step wherever it waits; the others keep their order.
TEST(Scheduler, AStoppedRequestLeavesTheQueueAtTheNextStepWhereverItWaits) {
  PoolLane lane(/*max_seq=*/64, /*pool_tokens=*/64, /*block_size=*/4, /*max_batch=*/1, /*max_tokens=*/64);
  Scheduler sched(lane);
  std::vector<int> done(4, 0);
  std::vector<std::string> stop(4);
  bool cancel_c = false;
  for (int i = 0; i < 4; ++i) {
    Request r;
    r.prompt = {1, 2, 3};
    r.options.max_new_tokens = i == 0 ? 30 : 2;
    if (i == 2) r.options.should_stop = [&cancel_c] { return cancel_c; };
    r.on_done = [&done, &stop, i](Generation&& g, const std::string&) {
      ++done[static_cast<size_t>(i)];
      stop[static_cast<size_t>(i)] = g.stats.stop;
      EXPECT_TRUE(i != 2 || g.tokens.empty()) << "the cancelled request ran";
    };
    sched.submit(std::move(r));
  }
  sched.step();  // the first request runs; three wait (one sequence a step)
  ASSERT_EQ(sched.waiting(), 3);
  cancel_c = true;
  const int64_t fed = lane.tokens_fed;
  sched.step();
  EXPECT_EQ(done[2], 1);
  EXPECT_EQ(stop[2], "caller");
  EXPECT_EQ(sched.waiting(), 2);
  EXPECT_EQ(lane.tokens_fed, fed + 1);  // the running request's decode, nothing of the cancelled one
  sched.run();
  EXPECT_EQ(done, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(stop[1], "max_tokens");
  EXPECT_EQ(stop[3], "max_tokens");
}

// A long prompt whose client went away while it was prefilled in chunks ran all its chunks before
// should_stop was asked (after its first token). Now it stops at the next step and frees its
// blocks.
TEST(Scheduler, AStoppedRequestStopsBetweenItsPrefillChunks) {
  PoolLane lane(/*max_seq=*/128, /*pool_tokens=*/128, /*block_size=*/4, /*max_batch=*/4, /*max_tokens=*/8);
  Scheduler sched(lane);
  bool cancel = false, finished = false;
  Request r;
  r.prompt.assign(60, 7);
  r.options.max_new_tokens = 4;
  r.options.should_stop = [&cancel] { return cancel; };
  r.on_done = [&](Generation&& g, const std::string& error) {
    finished = true;
    EXPECT_EQ(error, "");
    EXPECT_TRUE(g.tokens.empty());
    EXPECT_EQ(g.stats.stop, "caller");
  };
  sched.submit(std::move(r));
  sched.step();
  EXPECT_EQ(lane.tokens_fed, 8);  // the first chunk
  EXPECT_GT(sched.blocks().used_blocks(), 0);
  cancel = true;
  EXPECT_FALSE(sched.step());  // nothing left to run
  EXPECT_TRUE(finished);
  EXPECT_EQ(lane.tokens_fed, 8);
  EXPECT_EQ(sched.blocks().used_blocks(), 0);
}

// A lane step that throws something other than lg::Error (std::bad_alloc, an out_of_range from a
// lookup) left the step's requests running, so lg serve's worker planned the same failing step
// again forever and their clients never got an answer. It ends them with the error, as an
// lg::Error does; the requests after it run.
TEST(Scheduler, ALaneFaultOfAnyKindEndsTheStepsRequestsAndTheRestGoOn) {
  class FaultyLane : public PoolLane {
   public:
    using PoolLane::PoolLane;
    std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
      if (fail_next) {
        fail_next = false;
        throw std::out_of_range("map::at");
      }
      return PoolLane::step(batch);
    }
    bool fail_next = true;
  };
  FaultyLane lane(/*max_seq=*/64, /*pool_tokens=*/64, /*block_size=*/4, /*max_batch=*/1, /*max_tokens=*/64);
  Scheduler sched(lane);
  std::vector<std::string> errors(2, "none");
  std::vector<size_t> tokens(2, 0);
  for (size_t i = 0; i < 2; ++i) {
    Request r;
    r.prompt = {1, 2, 3};
    r.options.max_new_tokens = 3;
    r.on_done = [&errors, &tokens, i](Generation&& g, const std::string& error) {
      errors[i] = error;
      tokens[i] = g.tokens.size();
    };
    sched.submit(std::move(r));
  }
  sched.run();
  EXPECT_EQ(errors[0], "map::at");
  EXPECT_EQ(tokens[0], 0u);
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(tokens[1], 3u);
  EXPECT_EQ(sched.blocks().used_blocks(), 0);
}

}  // namespace
}  // namespace lg::runtime
