#include "runtime/scheduler.h"

#include <algorithm>
#include <string>

#include "runtime/finite_logits.h"
#include "support/error.h"

namespace lg::runtime {

namespace {
using Clock = std::chrono::steady_clock;

/// Whether `lane` picks this sequence's tokens from its logits itself (SeqStep::draw, sampled or
/// penalised): step() asks it to, and advance() takes SeqResult::drawn, by the same rule. Not for
/// a request that asks for log probabilities: its logits row comes to the host (a lane's draw
/// keeps the row on the lane), which picks there, Sampler::pick making the lane's draw.
bool drawn_on_lane(const Lane& lane, const Sampler& sampler, const GenerateOptions& o) {
  return lane.draws() && sampler.lane_draws() && o.logprobs < 0;
}
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
}  // namespace

/// A request while it is waiting or running: all its tokens (the prompt, then what it generated),
/// how many of them are in the KV cache, and the blocks that hold them.
struct Scheduler::Seq {
  int64_t id = 0;
  Request req;
  std::vector<int32_t> tokens;
  int64_t prompt_len = 0;
  int64_t computed = 0;
  std::vector<int32_t> table;
  int64_t named = 0;        ///< blocks of `table` named in the prefix cache (full, K/V written)
  bool looked_up = false;   ///< its prompt was counted in the prefix cache's queries
  Sampler sampler;
  Generation gen;
  Clock::time_point submitted, started, first_token;
  bool has_started = false;

  Seq(int64_t id_, Request r) : id(id_), req(std::move(r)), sampler(req.options.sampling) {
    tokens = req.prompt;
    prompt_len = static_cast<int64_t>(tokens.size());
    gen.stats.prompt_tokens = prompt_len;
    submitted = Clock::now();
  }
  int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - computed; }
  bool decoding() const { return static_cast<int64_t>(tokens.size()) > prompt_len; }
};

Scheduler::Scheduler(Lane& lane, SchedulerOptions options)
    : lane_(lane), limits_(lane.limits()), options_(options), blocks_(limits_.num_blocks, limits_.block_size) {
  if (options_.max_tokens <= 0 || options_.max_tokens > limits_.max_tokens) options_.max_tokens = limits_.max_tokens;
  if (options_.max_batch <= 0 || options_.max_batch > limits_.max_batch) options_.max_batch = limits_.max_batch;
  stats_.prefix_cache = options_.prefix_cache;
}

Scheduler::~Scheduler() = default;

int64_t Scheduler::submit(Request request) {
  const auto n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) throw Error("the prompt is empty: generation needs at least one prompt token");
  if (request.options.max_new_tokens < 1)
    throw Error("max new tokens must be >= 1, got " + std::to_string(request.options.max_new_tokens));
  if (request.options.logprobs < -1 || request.options.logprobs > kMaxTopLogprobs)
    throw Error("logprobs must be -1 (none) or in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                std::to_string(request.options.logprobs));
  if (n > limits_.max_seq)
    throw Error("the prompt has " + std::to_string(n) + " tokens, more than the context of " +
                std::to_string(limits_.max_seq) + " tokens");
  if (blocks_.blocks_for(n) > blocks_.num_blocks())
    throw Error("the prompt has " + std::to_string(n) + " tokens, more than the KV cache holds (" +
                std::to_string(limits_.pool_tokens()) + " tokens)");
  // The penalties read the history before the lane sees it (Sampler::logit_edits as the step is
  // planned), so a negative id is refused here, not in the middle of a step. Ids past the
  // vocabulary are the lane's to refuse (only it knows V).
  for (size_t k = 0; k < request.prompt.size(); ++k)
    if (request.prompt[k] < 0)
      throw Error("the prompt's token " + std::to_string(k) + " is " + std::to_string(request.prompt[k]) +
                  ": token ids are >= 0");
  const int64_t id = next_id_++;
  waiting_.push_back(std::make_unique<Seq>(id, std::move(request)));
  return id;
}

void Scheduler::run() {
  while (step()) {
  }
}

void Scheduler::fail_all(const std::string& error) {
  // The queues are emptied before any on_done runs: none of them sees a request moved out of
  // its place but still counted there.
  std::vector<std::unique_ptr<Seq>> all;
  for (auto& s : running_) all.push_back(std::move(s));
  for (auto& s : waiting_) all.push_back(std::move(s));
  running_.clear();
  waiting_.clear();
  for (auto& s : all) finish(std::move(s), error);
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats st = stats_;
  st.running = running();
  st.waiting = waiting();
  st.kv_blocks_total = blocks_.num_blocks();
  st.kv_block_size = blocks_.block_size();
  st.kv_blocks_used = blocks_.used_blocks();
  st.kv_blocks_free = blocks_.free_blocks();
  st.kv_blocks_cached_free = blocks_.cached_free_blocks();
  st.prefix_cache_evictions = blocks_.evictions();
  return st;
}

void Scheduler::preempt(Seq& s) {
  blocks_.release(s.table);  // its cached blocks stay cached: readmitted, it may take them back
  s.computed = 0;
  s.named = 0;
  ++stats_.preemptions;
  waiting_.push_front(take_running(&s));
}

std::unique_ptr<Scheduler::Seq> Scheduler::take_running(Seq* s) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& q) { return q.get() == s; });
  std::unique_ptr<Seq> out = std::move(*it);
  running_.erase(it);
  return out;
}

void Scheduler::finish(std::unique_ptr<Seq> owned, const std::string& error) {
  Seq& s = *owned;
  blocks_.release(s.table);
  ++stats_.requests_finished;
  if (s.gen.stats.stop.empty()) s.gen.stats.stop = error.empty() ? "caller" : "error";
  const auto now = Clock::now();
  if (!s.gen.tokens.empty()) s.gen.stats.decode_s = seconds(s.first_token, now);
  if (s.req.on_done) s.req.on_done(std::move(s.gen), error);
}

int64_t Scheduler::fits(const Seq& s, int64_t n) const {
  const int64_t room = (static_cast<int64_t>(s.table.size()) + blocks_.free_blocks()) * limits_.block_size - s.computed;
  return std::min(n, room);
}

int64_t Scheduler::take_cached_prefix(Seq& s) {
  if (!options_.prefix_cache) return 0;
  // The last token is always computed: its logits pick the next one. A block is shared only
  // whole, so a prompt cached to its end recomputes its last block (into a block of its own).
  const int64_t max_blocks = (static_cast<int64_t>(s.tokens.size()) - 1) / limits_.block_size;
  const int64_t blocks = blocks_.take_cached_prefix(s.table, s.tokens, max_blocks);
  s.named = blocks;
  s.computed = blocks * limits_.block_size;
  return s.computed;
}

// The running sequences first (decodes, then the rest of prompts being prefilled), then waiting
// requests in arrival order while the budget, the batch and the free blocks allow.
void Scheduler::plan_step(std::vector<Planned>& plan, int64_t& budget) {
  if (plan_running(plan, budget)) admit_waiting(plan, budget);
}

// A sequence that needs a block when none is free takes it from the newest running request,
// which is preempted.
bool Scheduler::plan_running(std::vector<Planned>& plan, int64_t& budget) {
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < running_.size(); ++i) {
      Seq& s = *running_[i];
      const bool decode = s.remaining() == 1;
      if ((pass == 0) != decode) continue;
      if (budget == 0 || static_cast<int64_t>(plan.size()) >= options_.max_batch) return false;
      int64_t n = std::min(s.remaining(), budget);
      bool preempted_self = false;
      while (fits(s, n) < 1) {
        Seq& victim = *running_.back();  // the newest; it may be planned already (a decode)
        auto planned = std::find_if(plan.begin(), plan.end(), [&](const Planned& p) { return p.seq == &victim; });
        if (planned != plan.end()) {
          budget += planned->n;
          plan.erase(planned);
        }
        preempted_self = &victim == &s;
        preempt(victim);  // erases the back of running_: the indices before it stay
        if (preempted_self) break;
      }
      if (preempted_self) continue;
      n = fits(s, n);
      blocks_.grow(s.table, s.computed + n);
      plan.push_back({&s, n});
      budget -= n;
    }
  }
  return true;
}

// In arrival order, except that a request whose prompt a running prefill is writing waits
// (awaits_prefix) while the ones behind it may go.
void Scheduler::admit_waiting(std::vector<Planned>& plan, int64_t& budget) {
  for (size_t i = 0; i < waiting_.size() && budget > 0 && static_cast<int64_t>(plan.size()) < options_.max_batch;) {
    Seq& s = *waiting_[i];
    const int64_t cached = take_cached_prefix(s);
    const bool awaits = awaits_prefix(s);
    const int64_t n = awaits ? 0 : fits(s, std::min(s.remaining(), budget));
    if (n < 1) {  // it waits, holding nothing
      blocks_.release(s.table);
      s.computed = s.named = 0;
      if (awaits) {
        ++i;
        continue;
      }
      break;
    }
    if (!s.looked_up) {
      s.looked_up = true;
      stats_.prefix_cache_queries += options_.prefix_cache ? s.prompt_len : 0;
      stats_.prefix_cache_hits += cached;
    }
    blocks_.grow(s.table, s.computed + n);
    running_.push_back(std::move(waiting_[i]));
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    plan.push_back({&s, n});
    budget -= n;
  }
}

bool Scheduler::awaits_prefix(const Seq& s) const {
  if (!options_.prefix_cache) return false;
  const int64_t bs = limits_.block_size;
  const int64_t most = (static_cast<int64_t>(s.tokens.size()) - 1) / bs;  // what take_cached_prefix may take
  if (most <= s.named) return false;
  for (const auto& r : running_) {
    if (r->remaining() <= 1) continue;  // a decode: its full blocks are named already
    const int64_t span = std::min(most * bs, static_cast<int64_t>(r->tokens.size()));
    const auto end = s.tokens.begin() + span;
    const int64_t shared = (std::mismatch(s.tokens.begin(), end, r->tokens.begin()).first - s.tokens.begin()) / bs;
    if (shared > s.named && r->named < shared) return true;
  }
  return false;
}

bool Scheduler::advance(Seq& s, const SeqResult& r, bool prefill) {
  const GenerateOptions& o = s.req.options;
  int32_t tok = r.argmax;
  const int64_t position = static_cast<int64_t>(s.tokens.size()) - 1;
  if (drawn_on_lane(lane_, s.sampler, o)) {  // step() set SeqStep::draw
    if (r.drawn == -1) throw_non_finite_logits(position, prefill, lane_.name());
    if (r.drawn < 0)
      throw Error("lane " + lane_.name() + ": internal error: the step drew no token for a sequence that asked (" +
                  std::to_string(r.drawn) + ")");
    tok = r.drawn;
  } else if (s.sampler.needs_logits() || o.logprobs >= 0) {
    // Sampled, greedy over edited logits, or with log probabilities: the row is on the host.
    check_finite_logits(r.logits, position, prefill, lane_.name());
    if (s.sampler.needs_logits()) {
      const std::span<const int32_t> all(s.tokens);
      const auto prompt_len = static_cast<size_t>(s.prompt_len);
      tok = s.sampler.pick(r.logits, all.first(prompt_len), all.subspan(prompt_len));
    }
    if (o.logprobs >= 0) {  // of the raw row: pick() penalises a copy of it
      TokenLogprobs lp = token_logprobs(r.logits, tok, o.logprobs);
      if (o.on_logprobs) o.on_logprobs(lp);
      s.gen.logprobs.push_back(std::move(lp));
    }
  }
  // The lane's argmax over a row it found not finite (SeqResult::argmax): this request fails,
  // the step's others go on.
  if (tok < 0) throw_non_finite_logits(position, prefill, lane_.name());
  ++stats_.generated_tokens;
  const auto now = Clock::now();
  if (s.gen.tokens.empty()) {
    s.first_token = now;
    s.gen.stats.prefill_s = seconds(s.started, now);
    s.gen.stats.first_token_s = seconds(s.submitted, now);
  } else {
    ++s.gen.stats.decode_steps;
  }
  s.tokens.push_back(tok);
  s.gen.tokens.push_back(tok);
  if (o.on_token) o.on_token(tok);
  auto& stop = s.gen.stats.stop;
  // An eos id ends the sequence once it has min_tokens tokens (vLLM's check_stop), even where the
  // hold could not keep one out (every token of the vocabulary held).
  if (std::find(o.eos_ids.begin(), o.eos_ids.end(), tok) != o.eos_ids.end() &&
      static_cast<int64_t>(s.gen.tokens.size()) >= o.sampling.min_tokens)
    stop = "eos";
  else if (o.should_stop && o.should_stop()) stop = "caller";
  else if (static_cast<int64_t>(s.gen.tokens.size()) >= o.max_new_tokens) stop = "max_tokens";
  else if (static_cast<int64_t>(s.tokens.size()) > limits_.max_seq) stop = "context";
  return stop.empty();
}

void Scheduler::drop_stopped() {
  auto stopped = [](const Seq& s) { return s.req.options.should_stop && s.req.options.should_stop(); };
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!stopped(**it)) {
      ++it;
      continue;
    }
    std::unique_ptr<Seq> gone = std::move(*it);
    it = waiting_.erase(it);
    finish(std::move(gone));
  }
  for (size_t i = 0; i < running_.size();) {
    if (stopped(*running_[i])) finish(take_running(running_[i].get()));
    else ++i;
  }
}

bool Scheduler::step() {
  drop_stopped();
  if (waiting_.empty() && running_.empty()) return false;
  std::vector<Planned> plan;
  int64_t budget = options_.max_tokens;
  plan_step(plan, budget);
  if (plan.empty())
    throw Error("scheduler: no sequence could be scheduled (" + std::to_string(blocks_.free_blocks()) + " free blocks)");
  std::vector<SeqStep> steps;
  steps.reserve(plan.size());
  const auto now = Clock::now();
  for (const Planned& p : plan) {
    Seq& s = *p.seq;
    if (!s.has_started) {
      s.has_started = true;
      s.started = now;
    }
    SeqStep st;
    st.tokens = std::span<const int32_t>(s.tokens.data() + s.computed, static_cast<size_t>(p.n));
    st.start_pos = s.computed;
    st.blocks = s.table;
    // Plain greedy requests take the lane's argmax, and the others (sampled, or edited logits) the
    // lane's own draw where it makes one: no f32[V] row comes back for them, unless the request
    // asks for log probabilities.
    if (s.computed + p.n == static_cast<int64_t>(s.tokens.size())) {
      if (drawn_on_lane(lane_, s.sampler, s.req.options)) {
        const std::span<const int32_t> all(s.tokens);
        const auto prompt_len = static_cast<size_t>(s.prompt_len);
        // The edits first: next_draw() takes the pick's uniform, which nothing may then undo.
        st.logit_edits = s.sampler.logit_edits(all.first(prompt_len), all.subspan(prompt_len));
        st.penalty = s.sampler.penalty();
        st.draw = s.sampler.next_draw();
      } else {
        st.want_logits = s.sampler.needs_logits() || s.req.options.logprobs >= 0;
      }
    }
    steps.push_back(st);
  }
  std::vector<SeqResult> results;
  try {
    results = lane_.step(steps);
  } catch (const std::exception& e) {
    // The step failed as a whole (the lane refused it or broke, lg::Error or not: a std::bad_alloc,
    // an out_of_range): every request in it ends with the error; the others go on. (Only
    // lg::Error was caught: any other left the step's requests running, and lg serve's worker
    // retried the same failing step forever.)
    for (const Planned& p : plan) finish(take_running(p.seq), e.what());
    return true;
  }
  ++stats_.steps;
  for (size_t k = 0; k < plan.size(); ++k) {
    Seq& s = *plan[k].seq;
    stats_.tokens_computed += plan[k].n;
    stats_.prompt_tokens_computed += std::clamp<int64_t>(s.prompt_len - s.computed, 0, plan[k].n);
    s.computed += plan[k].n;
    if (options_.prefix_cache)  // its blocks filled by this step, for later requests
      s.named = blocks_.cache_full_blocks(s.table, s.tokens, s.named, s.computed / limits_.block_size);
    if (s.remaining() > 0) continue;  // a prefill chunk that is not the prompt's last
    std::string error;
    try {
      // A prefill: the prompt's last chunk, or a preempted sequence's recompute (prompt and
      // generated tokens at once).
      if (advance(s, results[k], plan[k].n > 1 || !s.decoding())) continue;
    } catch (const Error& e) {
      s.gen.stats.stop = "error";
      error = e.what();
    }
    finish(take_running(&s), error);
  }
  return true;
}

}  // namespace lg::runtime
