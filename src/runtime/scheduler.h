// The scheduler: runs many generation requests together on one lane, one batched step at a time
// (continuous batching, as Orca and vLLM): a request joins the running batch at the next step
// once its first blocks fit, and leaves it when it stops. Each step spends a token budget:
// every running decode gets its one token first, then prompts are prefilled in chunks with what
// is left, so long prompts never stall the decodes. KV blocks come from a BlockManager; when a
// decode finds none free, the newest running request is preempted (its blocks freed, its
// tokens recomputed when it is admitted again) rather than any request failing.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/generate.h"
#include "runtime/kv_blocks.h"
#include "runtime/lane.h"
#include "runtime/sampler.h"

namespace lg::runtime {

struct SchedulerOptions {
  int64_t max_tokens = 0;  ///< token budget per step; 0: the lane's max_tokens
  int64_t max_batch = 0;   ///< sequences per step; 0: the lane's max_batch
};

/// One request: a prompt and how to generate after it (GenerateOptions: token limit, sampling,
/// eos ids, on_token, should_stop), and where its result goes.
struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  /// Called once when the request stops (eos, max_tokens, context, caller) with its tokens and
  /// statistics; an error confined to this request (non-finite logits when sampling) arrives as
  /// `error` with the tokens so far.
  std::function<void(Generation&&, const std::string& error)> on_done;
};

class Scheduler {
 public:
  /// Schedules onto `lane`, owning its KV pool's allocation (lane.limits()).
  explicit Scheduler(Lane& lane, SchedulerOptions options = {});
  ~Scheduler();

  /// Queues a request (first come, first served) and returns its id. Throws lg::Error, queuing
  /// nothing, for an empty prompt, max_new_tokens < 1, a prompt longer than the lane's context,
  /// or one the whole KV pool could not hold (the message names both sizes).
  int64_t submit(Request request);

  /// Runs one step. Returns false, doing nothing, when no request is waiting or running.
  bool step();
  /// Steps until every submitted request has finished.
  void run();

  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  const BlockManager& blocks() const { return blocks_; }
  /// Requests preempted so far (each recomputes its tokens when admitted again).
  int64_t preemptions() const { return preemptions_; }

 private:
  struct Seq;
  struct Planned {
    Seq* seq;
    int64_t n;  ///< tokens fed this step
  };
  /// Picks this step's sequences and chunk sizes within `budget` tokens, growing their blocks.
  void plan_step(std::vector<Planned>& plan, int64_t& budget);
  void preempt(Seq& s);
  /// Removes `s` from the running requests and hands it over.
  std::unique_ptr<Seq> take_running(Seq* s);
  /// Frees the blocks of a request leaving the scheduler and calls its on_done.
  void finish(std::unique_ptr<Seq> s, const std::string& error = {});
  /// After a step that fed every known token of `s`: picks the next one; true if `s` goes on.
  bool advance(Seq& s, const SeqResult& r);

  Lane& lane_;
  LaneLimits limits_;
  SchedulerOptions options_;
  BlockManager blocks_;
  int64_t next_id_ = 0;
  int64_t preemptions_ = 0;
  std::deque<std::unique_ptr<Seq>> waiting_;
  std::vector<std::unique_ptr<Seq>> running_;  ///< in admission order (the newest last)
};

}  // namespace lg::runtime
