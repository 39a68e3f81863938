// The engine's worker when the scheduler's step itself throws (not the lane's step, whose errors
// end that step's requests inside the scheduler): the requests in flight end with the error and
// the worker goes on serving. Over the hash lane of tests/common/pool_lane.h, no model needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "common/pool_lane.h"
#include "server/engine.h"
#include "server/server.h"
#include "support/error.h"

namespace {

using namespace lg::server;
using lg::testing::PoolLane;

/// The pool lane, with a gate that holds its steps until opened, and a fault: while `fail` is set,
/// name() throws. The scheduler asks a lane for its name outside the lane step's try, only when it
/// samples (for a non-finite logits error), so a sampled request then makes the scheduler's step
/// throw, as a broken invariant or a std::bad_alloc of its own would, while greedy requests run.
class FaultLane : public PoolLane {
 public:
  using PoolLane::PoolLane;
  std::string name() const override {
    if (fail) throw std::runtime_error("scheduler fault for the test");
    return PoolLane::name();
  }
  std::vector<lg::SeqResult> step(std::span<const lg::SeqStep> batch) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++entered_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    return PoolLane::step(batch);
  }
  /// Waits until a step has begun (and is held at the gate while it is closed).
  void wait_for_step() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ > 0; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  std::atomic<bool> fail{false};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t entered_ = 0;
  bool open_ = false;
};

/// Waits up to 10 s for `job` to finish; false if it has not.
bool finishes(EngineJob& job) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  EnginePiece ignored;
  while (std::chrono::steady_clock::now() < deadline)
    if (job.wait(ignored, std::chrono::milliseconds(50))) return true;
  return false;
}

/// The error `job` ended with, "" if none.
std::string error_of(const EngineJob& job) {
  try {
    job.result();
  } catch (const lg::Error& e) {
    return e.what();
  }
  return "";
}

// A scheduler fault was only logged: the requests stayed queued, met the same fault at every
// step, and the worker retried forever while their clients waited for an answer that never came.
// Now every request in flight ends with the fault's text, as a lane error ends its step's
// requests, and a request that comes after is served.
TEST(EngineFaultTest, ASchedulerFaultEndsTheRequestsInFlightAndLaterOnesAreServed) {
  auto owned = std::make_unique<FaultLane>(/*max_seq=*/64, /*pool_tokens=*/256, /*block_size=*/16, /*max_batch=*/4,
                                           /*max_tokens=*/64);
  FaultLane& lane = *owned;
  lg::model::ModelConfig config;
  config.vocab_size = lg::testing::kPoolLaneVocab;
  Engine engine(std::move(owned), config, "pool", EngineOptions{});

  GenerationRequest greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 4;
  GenerationRequest sampled = greedy;
  sampled.temperature = 1;
  sampled.seed = 1;
  // The first request's step is held at the gate, so the next two reach the scheduler together
  // and are both in flight at the step that fails; the first ends (one token) before it.
  GenerationRequest one = greedy;
  one.max_tokens = 1;
  auto first = engine.start({1, 2, 3}, one, 0);
  lane.wait_for_step();
  auto a = engine.start({4, 5, 6}, sampled, 0);
  auto b = engine.start({7, 8}, greedy, 0);
  lane.fail = true;
  lane.open();
  ASSERT_TRUE(finishes(*first));
  EXPECT_EQ(error_of(*first), "");
  EXPECT_EQ(first->result().completion_tokens, 1);
  for (auto* job : {a.get(), b.get()}) {
    ASSERT_TRUE(finishes(*job)) << "a request in flight at the scheduler's fault never ended";
    EXPECT_EQ(error_of(*job), "scheduler fault for the test");
  }
  // The worker is still there, with no block held: a later (greedy) request runs to its end.
  auto later = engine.start({9, 10, 11}, greedy, 0);
  ASSERT_TRUE(finishes(*later));
  EXPECT_EQ(error_of(*later), "");
  EXPECT_EQ(later->result().completion_tokens, 4);
  EXPECT_EQ(engine.in_flight(), 0);
  // The worker publishes its stats after the step that ended the request.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (engine.stats().kv_blocks_used != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

/// The pool lane whose steps fail after its first: a lane error at a request's second token.
class FailingLane : public PoolLane {
 public:
  using PoolLane::PoolLane;
  std::vector<lg::SeqResult> step(std::span<const lg::SeqStep> batch) override {
    if (steps_++ > 0) throw lg::Error("lane fault for the test");
    return PoolLane::step(batch);
  }

 private:
  int64_t steps_ = 0;
};

// A stream that fails after its status line carries the error as an event and then ends as every
// stream does, with `data: [DONE]` (vLLM's generators send it after their error event; clients
// that wait for it waited for the connection to close instead).
TEST(EngineFaultTest, AStreamThatFailsSendsItsErrorThenDone) {
  lg::model::ModelConfig config;
  config.vocab_size = lg::testing::kPoolLaneVocab;
  Engine engine(std::make_unique<FailingLane>(64, 256, 16, 4, 64), config, "pool", EngineOptions{});
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  auto r = c.Post("/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 4, "stream": true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const size_t error = r->body.find("data: {\"error\"");
  ASSERT_NE(error, std::string::npos) << r->body;
  EXPECT_NE(r->body.find("lane fault for the test", error), std::string::npos) << r->body;
  EXPECT_TRUE(r->body.ends_with("data: [DONE]\n\n")) << r->body;
}

}  // namespace
