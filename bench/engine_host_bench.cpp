// engine_host_bench: the host's work between an engine's steps, without a GPU. The serving run's
// step trace (bench/RESULTS.md, forty-fourth session, call 5) put 0.35 ms (median) between the
// lane's steps at ~128 sequences: the scheduler, the requests' callbacks and the engine's loop.
// This serves the hash lane of tests/common/pool_lane.h (no model, no tokenizer: token ids only)
// to N requests followed by N threads, as lg serve's handlers follow them, and prints the host's
// gap before each step of N decodes (from the end of the step before: what LG_STEP_TRACE's gaps
// are on a GPU lane), p10 / median / p90. Session 44: 253-853 us median at 128 sequences on the
// 2-core build machine with the worker waking each follower, 27-28 us with JobWaker.
//   engine_host_bench [SEQUENCES=128] [TOKENS=256] [PROMPT=512]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/pool_lane.h"
#include "server/engine.h"

namespace {

using clock_type = std::chrono::steady_clock;

/// The pool lane, its time inside step() summed and, for steps of `full` one-token sequences, the
/// host's gap before each (from the end of the step before, as LG_STEP_TRACE's gaps).
class TimedLane : public lg::testing::PoolLane {
 public:
  TimedLane(int64_t max_seq, int64_t pool_tokens, int64_t max_batch)
      : PoolLane(max_seq, pool_tokens, 16, max_batch, 4096), full(max_batch) {}
  std::vector<lg::SeqResult> step(std::span<const lg::SeqStep> batch) override {
    const auto t0 = clock_type::now();
    const bool decode = static_cast<int64_t>(batch.size()) == full &&
                        std::all_of(batch.begin(), batch.end(), [](const lg::SeqStep& q) { return q.tokens.size() == 1; });
    if (decode && last_end) gaps_us.push_back(std::chrono::duration<double, std::micro>(t0 - *last_end).count());
    auto out = PoolLane::step(batch);
    last_end = clock_type::now();
    lane_s += std::chrono::duration<double>(*last_end - t0).count();
    return out;
  }
  const int64_t full;
  double lane_s = 0;
  std::vector<double> gaps_us;

 private:
  std::optional<clock_type::time_point> last_end;
};

int arg(int argc, char** argv, int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; }

}  // namespace

int main(int argc, char** argv) {
  const int n = arg(argc, argv, 1, 128), tokens = arg(argc, argv, 2, 256), prompt = arg(argc, argv, 3, 512);
  const int64_t max_seq = prompt + tokens + 16;
  auto owned = std::make_unique<TimedLane>(max_seq, (max_seq + 16) * n, n);
  TimedLane& lane = *owned;
  lg::model::ModelConfig config;
  config.vocab_size = lg::testing::kPoolLaneVocab;
  lg::server::EngineOptions eo;
  eo.max_waiting = 1 << 20;
  lg::server::Engine engine(std::move(owned), config, "pool", eo);
  lg::server::GenerationRequest r;
  r.temperature = 0;
  r.max_tokens = tokens;
  r.ignore_eos = true;
  std::vector<std::shared_ptr<lg::server::EngineJob>> jobs;
  const auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> ids(static_cast<size_t>(prompt));
    for (int j = 0; j < prompt; ++j) ids[static_cast<size_t>(j)] = (i * 31 + j * 7) % lg::testing::kPoolLaneVocab;
    jobs.push_back(engine.start(ids, r, 0));
  }
  std::atomic<int64_t> got{0};
  std::vector<std::thread> followers;
  for (auto& job : jobs)
    followers.emplace_back([&, job] {
      const auto result = job->follow([&](const lg::server::EnginePiece& p) {
        got += static_cast<int64_t>(p.token_ids.size());
        return true;
      });
      (void)result;
    });
  for (auto& t : followers) t.join();
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  std::vector<double> gaps = lane.gaps_us;
  std::sort(gaps.begin(), gaps.end());
  auto pct = [&](double q) { return gaps.empty() ? 0.0 : gaps[static_cast<size_t>(q * (gaps.size() - 1))]; };
  std::printf("%d sequences x %d tokens after %d-token prompts: %lld steps, %.3f s (the lane's steps %.3f s)\n", n,
              tokens, prompt, static_cast<long long>(lane.steps), wall, lane.lane_s);
  std::printf("host gap before a step of %d decodes: p10 %.0f us, median %.0f us, p90 %.0f us (%zu steps); %lld "
              "tokens followed\n",
              n, pct(0.1), pct(0.5), pct(0.9), gaps.size(), static_cast<long long>(got.load()));
  return 0;
}
