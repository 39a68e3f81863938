// The scheduler: runs many generation requests together on one lane, one batched step at a time
// (continuous batching, as Orca and vLLM): a request joins the running batch at the next step
// once its first blocks fit, and leaves it when it stops. Each step spends a token budget:
// every running decode gets its one token first, then prompts are prefilled in chunks with what
// is left, so long prompts never stall the decodes. KV blocks come from a BlockManager; when a
// decode finds none free, the newest running request is preempted (its blocks freed, its
// tokens recomputed when it is admitted again) rather than any request failing.
//
// With the prefix cache (on by default, SchedulerOptions::prefix_cache) a request admitted to
// the batch first takes the cached KV blocks its tokens start with (kv_blocks.h) and prefills
// only the rest; the blocks each step fills are named for later requests once full. A request
// whose prompt starts with blocks another request's prefill is writing waits for them (the
// requests behind it may go first) rather than computing them a second time.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/kv_blocks.h"
#include "runtime/lane.h"
#include "runtime/sampler.h"

namespace lg::runtime {

struct SchedulerOptions {
  int64_t max_tokens = 0;     ///< token budget per step; 0: the lane's max_tokens
  int64_t max_batch = 0;      ///< sequences per step; 0: the lane's max_batch
  bool prefix_cache = true;   ///< share full KV blocks of equal token prefixes (`--no-prefix-cache`)
};

/// What the scheduler is doing and has done, for metrics (`lg serve`'s /metrics). The request
/// and block figures are the state now; the counters are cumulative since construction.
struct SchedulerStats {
  int64_t running = 0;  ///< requests in the running batch
  int64_t waiting = 0;  ///< requests queued: never admitted, or preempted
  int64_t kv_blocks_total = 0;        ///< blocks in the lane's KV pool
  int64_t kv_block_size = 0;          ///< positions per block
  int64_t kv_blocks_used = 0;         ///< blocks held by running requests
  int64_t kv_blocks_free = 0;         ///< blocks no request holds (kv_blocks_total - kv_blocks_used)
  int64_t kv_blocks_cached_free = 0;  ///< of the free blocks, those holding a cached prefix (evictable)
  bool prefix_cache = false;          ///< whether prefix caching is on
  int64_t prefix_cache_queries = 0;   ///< prompt tokens looked up in the prefix cache (each request once)
  int64_t prefix_cache_hits = 0;      ///< of those, tokens found cached (not computed)
  int64_t prefix_cache_evictions = 0; ///< cached blocks evicted to hold other tokens
  int64_t prompt_tokens_computed = 0; ///< prompt positions fed to the lane, recomputation after a preemption included
  int64_t tokens_computed = 0;        ///< every position fed to the lane (prompts, decodes, recomputation)
  int64_t generated_tokens = 0;       ///< tokens sampled
  int64_t preemptions = 0;            ///< requests preempted (their blocks freed, recomputed later)
  int64_t steps = 0;                  ///< lane steps run
  int64_t requests_finished = 0;      ///< requests that left (stopped, cancelled or failed)
};

/// One request: a prompt and how to generate after it (GenerateOptions: token limit, sampling,
/// eos ids, on_token, should_stop), and where its result goes.
struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  /// Called once when the request stops (eos, max_tokens, context, caller) with its tokens and
  /// statistics; an error confined to this request (non-finite logits when sampling or
  /// penalising) arrives as `error` with the tokens so far.
  std::function<void(Generation&&, const std::string& error)> on_done;
};

class Scheduler {
 public:
  /// Schedules onto `lane`, owning its KV pool's allocation (lane.limits()).
  explicit Scheduler(Lane& lane, SchedulerOptions options = {});
  ~Scheduler();

  /// Queues a request (first come, first served) and returns its id. Throws lg::Error, queuing
  /// nothing, for an empty prompt, a negative token id in it, max_new_tokens < 1, logprobs outside
  /// [-1, kMaxTopLogprobs], a prompt longer than the lane's context, or one the whole KV pool could
  /// not hold (the message names both sizes), and for sampling options the Sampler refuses.
  int64_t submit(Request request);

  /// Runs one step. Returns false, doing nothing, when no request is waiting or running.
  bool step();
  /// Steps until every submitted request has finished.
  void run();
  /// Ends every request, waiting or running, with `error` (its on_done gets it, with the tokens
  /// so far) and frees their blocks. For a caller whose step() threw (an invariant of the
  /// scheduler broken, a std::bad_alloc): left queued, the requests would meet the same fault at
  /// every step and never end.
  void fail_all(const std::string& error);

  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  const BlockManager& blocks() const { return blocks_; }
  /// Requests preempted so far (each recomputes its tokens when admitted again).
  int64_t preemptions() const { return stats_.preemptions; }
  /// The figures of SchedulerStats, now. Cheap (no lock, no allocation); like every member, call
  /// it from the thread that steps.
  SchedulerStats stats() const;

 private:
  struct Seq;
  struct Planned {
    Seq* seq;
    int64_t n;  ///< tokens fed this step
  };
  /// Picks this step's sequences and chunk sizes within `budget` tokens, growing their blocks.
  void plan_step(std::vector<Planned>& plan, int64_t& budget);
  /// plan_step's first part: the running requests. False when the budget or the batch is spent.
  bool plan_running(std::vector<Planned>& plan, int64_t& budget);
  /// plan_step's second part: admits waiting requests while the budget, batch and blocks allow.
  void admit_waiting(std::vector<Planned>& plan, int64_t& budget);
  /// The largest chunk of up to `n` tokens of `s` that its blocks and the free ones hold.
  int64_t fits(const Seq& s, int64_t n) const;
  /// With the prefix cache: `s` (not running, no blocks) takes the cached blocks its tokens start
  /// with, all but its last token at most. Returns the tokens they hold.
  int64_t take_cached_prefix(Seq& s);
  /// With the prefix cache: whether a running prefill is writing full blocks of `s`'s tokens
  /// beyond the cached ones `s` took, so that `s` waiting for them to be named saves computing
  /// them twice (n choices of one prompt, a system prompt many requests start with at once).
  /// Never for a decoding sequence's blocks (they are named as they fill).
  bool awaits_prefix(const Seq& s) const;
  /// Requests whose caller stopped them (should_stop: a client that went away, a shutdown's cut)
  /// leave before a step is planned, wherever they are: a waiting one never runs (anywhere in
  /// the queue, not only at its front), a running one frees its blocks now, not after its next
  /// token or the rest of a long prompt's chunks.
  void drop_stopped();
  void preempt(Seq& s);
  /// Removes `s` from the running requests and hands it over.
  std::unique_ptr<Seq> take_running(Seq* s);
  /// Frees the blocks of a request leaving the scheduler and calls its on_done.
  void finish(std::unique_ptr<Seq> s, const std::string& error = {});
  /// After a step that fed every known token of `s`: picks the next one; true if `s` goes on.
  /// `prefill`: the step's tokens of `s` were a prefill (named so in a non-finite logits error).
  bool advance(Seq& s, const SeqResult& r, bool prefill);

  Lane& lane_;
  LaneLimits limits_;
  SchedulerOptions options_;
  BlockManager blocks_;
  int64_t next_id_ = 0;
  SchedulerStats stats_;  ///< the counters; stats() adds the state
  std::deque<std::unique_ptr<Seq>> waiting_;
  std::vector<std::unique_ptr<Seq>> running_;  ///< in admission order (the newest last)
};

}  // namespace lg::runtime
