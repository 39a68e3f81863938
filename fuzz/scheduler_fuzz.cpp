// Fuzz target for the scheduler (runtime/scheduler.h) over the hash lane of
// tests/common/pool_lane.h, which models a paged KV cache exactly: the input's bytes choose the
// pool (context, block size, pool size, batch and token limits of the lane and of the scheduler),
// whether the prefix cache is on, and the requests (prompts fresh or cut from a few shared stems,
// max_new_tokens, an eos id, sampling with its seed, the step each arrives at, the token after
// which its client goes away, and last the repetition, presence and frequency penalties and min_p,
// then whether the lane or the host makes the picks that read logits, sampled or penalised (the
// solo runs the other): drawn after
// every other choice, so an input kept before they were drawn replays the schedule it
// was kept for, its requests without them where it ends). What must hold, else the target aborts:
//   - submit() refuses only a request that can never run (empty, max_new_tokens < 1, longer
//     than the context or than the pool, a negative token id);
//   - every accepted request finishes exactly once, with no error, generating exactly its solo
//     tokens (a cancelled one a prefix of them);
//   - no step writes into a block another sequence holds or the prefix cache names (the lane
//     throws), and no step fails otherwise;
//   - after the last step no block is used, and the scheduler's counters agree with what the
//     lane was fed;
//   - the schedule ends within a bound of steps (no livelock between preemption and admission).
// The randomized test in tests/runtime/scheduler_test.cpp runs 300 seeds of the same kind of
// schedule; this target lets coverage steer the choices. Seeds in fuzz/corpus/scheduler_fuzz/;
// their replay (ctest fuzz_replay.scheduler_fuzz) fails unless some accepted request of them ran
// with each penalty and with min_p, and some sampled one and some penalised one on a lane that draws
// (LgFuzzReplayCheck).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "common/pool_lane.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "support/error.h"

namespace {

using lg::testing::kPoolLaneVocab;
using lg::testing::PoolLane;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "scheduler_fuzz: %s\n", what.c_str());
  std::abort();
}

/// The input as a stream of choices; past its end every choice is the smallest.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  /// An integer in [lo, hi], from one byte (two when the range is wider than 256).
  int64_t in(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    uint64_t v = byte();
    if (span > 256) v = v << 8 | byte();
    return lo + static_cast<int64_t>(v % span);
  }
  bool flip() { return (byte() & 1) != 0; }
  bool done() const { return n_ == 0; }

 private:
  uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  const uint8_t* p_;
  size_t n_;
};

struct Spec {
  std::vector<int32_t> prompt;
  lg::runtime::GenerateOptions options;
  int64_t arrive = 0;         ///< the step it is submitted before
  int64_t cancel_after = -1;  ///< tokens after which its client goes away (-1: never)
  bool accepted = false;
  std::vector<int32_t> solo;  ///< what it generates alone
};

std::vector<Spec> make_specs(Choices& c, int64_t max_seq, int64_t pool_tokens) {
  std::vector<std::vector<int32_t>> stems(static_cast<size_t>(c.in(1, 3)));
  for (auto& s : stems) {
    s.resize(static_cast<size_t>(c.in(1, max_seq)));
    for (auto& t : s) t = static_cast<int32_t>(c.in(0, kPoolLaneVocab - 1));
  }
  std::vector<Spec> specs(static_cast<size_t>(c.in(1, 16)));
  for (Spec& s : specs) {
    if (c.flip()) {  // a stem's beginning and a tail of its own
      const auto& stem = stems[static_cast<size_t>(c.in(0, static_cast<int64_t>(stems.size()) - 1))];
      s.prompt.assign(stem.begin(), stem.begin() + c.in(0, static_cast<int64_t>(stem.size())));
    }
    for (int64_t k = c.in(0, 20); k-- > 0;) s.prompt.push_back(static_cast<int32_t>(c.in(0, kPoolLaneVocab - 1)));
    if (c.in(0, 15) == 0) s.prompt.resize(static_cast<size_t>(std::min<int64_t>(c.in(0, max_seq + 4), pool_tokens + 4)));
    s.options.max_new_tokens = c.in(0, 48);
    if (c.in(0, 3) == 0) s.options.eos_ids = {c.in(0, kPoolLaneVocab - 1)};
    if (c.in(0, 3) == 0) {
      s.options.sampling.temperature = 0.7;
      s.options.sampling.seed = static_cast<uint64_t>(c.in(0, 1000));
    }
    s.arrive = c.in(0, 40);
    if (c.in(0, 4) == 0) s.cancel_after = c.in(0, 12);
  }
  std::stable_sort(specs.begin(), specs.end(), [](const Spec& a, const Spec& b) { return a.arrive < b.arrive; });
  return specs;
}

/// The penalties and min_p of each request (runtime/penalties.h, vLLM's ranges), drawn after every
/// other choice of the input: where it ends (every choice 0) a request has none. The values are
/// ones that change the hash lane's picks: its argmax logit is 10 and the others at most 6, so a
/// repetition penalty of 2 or more, or frequency and presence penalties over a few repeats, move
/// the argmax of a greedy request too; min_p acts on sampled ones (after temperature 0.7).
void draw_penalties(Choices& c, std::vector<Spec>& specs) {
  static constexpr double kRepetition[] = {0.5, 1.3, 2.0, 3.0};
  for (Spec& s : specs) {
    if (c.in(0, 1) == 0) continue;
    lg::runtime::SamplingOptions& o = s.options.sampling;
    if (c.flip()) o.penalties.repetition = kRepetition[c.in(0, 3)];
    if (c.flip()) o.penalties.presence = static_cast<double>(c.in(-4, 4)) * 0.5;    // [-2, 2]
    if (c.flip()) o.penalties.frequency = static_cast<double>(c.in(-4, 4)) * 0.5;   // [-2, 2]
    if (c.flip()) o.min_p = static_cast<double>(c.in(1, 4)) * 0.25;                 // (0, 1]
  }
}

/// Accepted requests run, over the whole replay, with each penalty and with min_p (sampled).
struct Exercised {
  int64_t requests = 0, repetition = 0, presence = 0, frequency = 0, min_p_sampled = 0, penalised_greedy = 0;
  int64_t lane_drawn = 0;      ///< sampled on a lane that draws (the solo run: the host)
  int64_t lane_penalised = 0;  ///< penalised, greedy or sampled, on a lane that draws
} exercised;

void count_exercised(const Spec& s, bool lane_draws) {
  const lg::runtime::SamplingOptions& o = s.options.sampling;
  ++exercised.requests;
  exercised.lane_drawn += lane_draws && o.temperature > 0;
  exercised.lane_penalised += lane_draws && o.penalties.active();
  exercised.repetition += o.penalties.repetition != 1;
  exercised.presence += o.penalties.presence != 0;
  exercised.frequency += o.penalties.frequency != 0;
  exercised.min_p_sampled += o.min_p > 0 && o.temperature > 0;
  exercised.penalised_greedy += o.penalties.active() && o.temperature == 0;
}

/// Whether submit() may refuse `s`: scheduler.h's rules.
bool can_never_run(const Spec& s, const lg::LaneLimits& l) {
  const auto n = static_cast<int64_t>(s.prompt.size());
  return n == 0 || s.options.max_new_tokens < 1 || n > l.max_seq || (n + l.block_size - 1) / l.block_size > l.num_blocks ||
         std::any_of(s.prompt.begin(), s.prompt.end(), [](int32_t t) { return t < 0; });
}

void run(Choices& c) {
  const int64_t max_seq = c.in(1, 96), bs = c.in(1, 16);
  const int64_t pool = max_seq + c.in(0, 4 * max_seq);
  PoolLane lane(max_seq, pool, bs, c.in(1, 16), c.in(1, 96));
  lg::runtime::SchedulerOptions so;
  so.prefix_cache = c.flip();
  if (c.flip()) so.max_tokens = c.in(1, 64);
  if (c.flip()) so.max_batch = c.in(1, 16);
  std::vector<Spec> specs = make_specs(c, max_seq, pool);
  draw_penalties(c, specs);
  // Last of all, who draws the sampled tokens: the lane (SeqStep::draw, as the GPU lanes) or the
  // host from logits rows; the solo runs draw the other way, so both must give the same tokens.
  lane.draws_tokens = c.flip();

  lg::runtime::Scheduler sched(lane, so);
  lane.watch = &sched.blocks();
  const size_t n = specs.size();
  std::vector<lg::runtime::Generation> got(n);
  std::vector<int> done(n, 0);
  std::vector<int64_t> seen(n, 0);
  size_t next = 0;
  int64_t step = 0;
  for (; next < n || sched.waiting() + sched.running() > 0; ++step) {
    for (; next < n && specs[next].arrive <= step; ++next) {
      Spec& s = specs[next];
      const size_t i = next;
      lg::runtime::Request r;
      r.prompt = s.prompt;
      r.options = s.options;
      r.options.on_token = [&seen, i](int32_t) { ++seen[i]; };
      if (s.cancel_after >= 0) r.options.should_stop = [&seen, &specs, i] { return seen[i] >= specs[i].cancel_after; };
      r.on_done = [&got, &done, i](lg::runtime::Generation&& g, const std::string& error) {
        if (!error.empty()) fail("request " + std::to_string(i) + " failed: " + error);
        got[i] = std::move(g);
        ++done[i];
      };
      try {
        sched.submit(std::move(r));
        s.accepted = true;
      } catch (const lg::Error& e) {
        if (!can_never_run(s, lane.limits())) fail(std::string("submit refused a request that can run: ") + e.what());
      }
      if (s.accepted && can_never_run(s, lane.limits())) fail("submit accepted a request that can never run");
    }
    try {
      sched.step();
    } catch (const std::exception& e) {
      fail(std::string("a step failed: ") + e.what());
    }
    // Each step feeds at least one token of a running or admitted request; a schedule of at most
    // 16 requests of at most 96 + 48 tokens, each recomputed after a preemption, ends far sooner.
    if (step > 200000) fail("the scheduler makes no progress");
  }

  int64_t generated = 0;
  for (size_t i = 0; i < n; ++i) {
    const Spec& s = specs[i];
    if (!s.accepted) {
      if (done[i] != 0) fail("a refused request finished");
      continue;
    }
    if (done[i] != 1) fail("request " + std::to_string(i) + " finished " + std::to_string(done[i]) + " times");
    count_exercised(s, lane.draws_tokens);
    PoolLane alone(max_seq, max_seq, bs, 1, 64);
    alone.draws_tokens = !lane.draws_tokens;
    const std::vector<int32_t> want = lg::runtime::generate(alone, s.prompt, s.options).tokens;
    const auto& have = got[i].tokens;
    generated += static_cast<int64_t>(have.size());
    const bool cancelled = s.cancel_after >= 0 && got[i].stats.stop == "caller";
    if (cancelled ? !(have.size() <= want.size() && std::equal(have.begin(), have.end(), want.begin())) : have != want)
      fail("request " + std::to_string(i) + " generated other tokens than alone");
  }
  const lg::runtime::SchedulerStats st = sched.stats();
  if (st.kv_blocks_used != 0 || st.kv_blocks_free != st.kv_blocks_total) fail("blocks leaked");
  if (st.running + st.waiting != 0) fail("requests left behind");
  if (st.tokens_computed != lane.tokens_fed || st.steps != lane.steps) fail("counters disagree with the lane");
  if (st.generated_tokens != generated) fail("generated_tokens disagrees with the requests' tokens");
  if (st.prefix_cache_hits > st.prefix_cache_queries) fail("more prefix-cache hits than queries");
  if (!so.prefix_cache && st.kv_blocks_cached_free + st.prefix_cache_queries + st.prefix_cache_evictions != 0)
    fail("prefix-cache activity with the cache off");
}

}  // namespace

// Called by replay_main.cpp after the corpus ran: nonzero (the replay fails) unless its accepted
// requests ran with every penalty and with min_p, which the property above then covers.
extern "C" int LgFuzzReplayCheck() {
  const Exercised& e = exercised;
  std::printf("scheduler_fuzz: %lld accepted requests: %lld with a repetition penalty, %lld presence, %lld "
              "frequency, %lld sampled with min_p, %lld greedy with a penalty, %lld sampled on a lane that draws, %lld "
              "penalised on a lane that draws\n",
              static_cast<long long>(e.requests), static_cast<long long>(e.repetition),
              static_cast<long long>(e.presence), static_cast<long long>(e.frequency),
              static_cast<long long>(e.min_p_sampled), static_cast<long long>(e.penalised_greedy),
              static_cast<long long>(e.lane_drawn), static_cast<long long>(e.lane_penalised));
  const bool all = e.repetition > 0 && e.presence > 0 && e.frequency > 0 && e.min_p_sampled > 0 &&
                   e.penalised_greedy > 0 && e.lane_drawn > 0 && e.lane_penalised > 0;
  if (!all)
    std::fprintf(stderr, "scheduler_fuzz: the corpus runs no request with some penalty or min_p, or none drawn by the lane\n");
  return all ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  Choices c(data, size);
  run(c);
  return 0;
}
