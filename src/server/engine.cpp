#include "server/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "lanes/factory.h"
#include "runtime/forward_graph.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "server/stop_strings.h"
#include "support/count_noun.h"
#include "tokenizer/model_fit.h"

namespace lg::server {

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// None without a tokenizer.json: the model then takes token-id prompts only, as random weights do.
// A tokenizer that does not fit the checkpoint is a start-up warning (tokenizer/model_fit.h).
std::optional<tokenizer::Tokenizer> load_tokenizer(const model::ModelDir& dir) {
  if (!dir.tokenizer_json) return std::nullopt;
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(*dir.tokenizer_json);
  tokenizer::warn_model_fit(tok, *dir.tokenizer_json, dir.config.vocab_size);
  return tok;
}

// The KV cache is allocated once for the server's life, so the default context is capped:
// a 32K-128K max_position_embeddings would reserve gigabytes for requests that rarely need it.
constexpr int64_t kDefaultContextCap = 4096;

// `origin`: where model_max comes from, for the message (runtime::context_origin).
int64_t resolve_context(const EngineOptions& options, int64_t model_max, const std::string& origin) {
  const int64_t context = options.max_seq > 0 ? options.max_seq : std::min(model_max, kDefaultContextCap);
  if (context > model_max)
    throw Error(fmt::format("--max-seq {} exceeds the model's context of {} tokens ({})", context, model_max, origin));
  return context;
}

}  // namespace

/// One request's state on the worker: its text (stream decoder, stop strings), its timing for
/// the metrics, and the job its output goes to. The runtime's callbacks hold it.
struct JobState {
  std::shared_ptr<EngineJob> job;
  /// The text; none without a tokenizer (ids only). It skips special tokens unless the request
  /// keeps them (skip_special_tokens), so stop strings are matched in the text the client gets.
  std::optional<tokenizer::StreamDecoder> decoder;
  StopMatcher stops;
  /// The ids that end the request (the model's eos, the request's stop_token_ids): never shown as
  /// text, as vLLM's detokenizer leaves out the token that stopped it. With ignore_eos the model's
  /// eos ids are not among them: generation goes on past them and they are text like any token (a
  /// special one's shown with skip_special_tokens false), as vLLM detokenizes them.
  std::vector<int64_t> eos;
  /// The request's stop_token_ids that are not the model's eos: the stop_reason they give.
  std::vector<int64_t> stop_token_ids;
  /// vLLM's min_tokens: a stop string must end in the text of a later token.
  int64_t min_tokens = 0;
  int64_t tokens = 0;  ///< generated so far
  const std::atomic<bool>* stopping = nullptr;
  std::atomic<int64_t>* in_flight = nullptr;
  ServeMetrics* metrics = nullptr;
  JobWaker* waker = nullptr;  ///< wakes the job's follower after the worker's step
  std::string id;
  bool log = false;
  int64_t prompt_tokens = 0;
  Clock::time_point started, last_token;
  bool has_token = false;
  /// The log probabilities of the token on_token gets next (runtime::GenerateOptions::on_logprobs).
  std::optional<runtime::TokenLogprobs> next_logprobs;

  JobState(std::vector<std::string> stop_strings) : stops(std::move(stop_strings)) {}

  void emit(EnginePiece piece) {
    if (piece.empty()) return;
    {
      std::lock_guard<std::mutex> lock(job->mu_);
      job->pending_.text += piece.text;
      job->pending_.token_ids.insert(job->pending_.token_ids.end(), piece.token_ids.begin(), piece.token_ids.end());
      for (auto& lp : piece.logprobs) job->pending_.logprobs.push_back(std::move(lp));
      job->result_.text += piece.text;
    }
    waker->add(job);
  }

  void on_token(int32_t token) {
    const auto now = Clock::now();
    if (!has_token) metrics->first_token(prompt_tokens, seconds(started, now));
    else metrics->next_token(seconds(last_token, now));
    if (!has_token) {
      std::lock_guard<std::mutex> lock(job->mu_);
      job->result_.ttft_s = seconds(started, now);
    }
    has_token = true;
    last_token = now;
    EnginePiece piece;
    piece.token_ids.push_back(token);
    if (next_logprobs) piece.logprobs.push_back(std::move(*next_logprobs));
    next_logprobs.reset();
    const bool is_eos = std::find(eos.begin(), eos.end(), token) != eos.end();
    ++tokens;
    if (decoder && !is_eos) piece.text = stops.push(decoder->push(token), /*match=*/tokens > min_tokens);
    emit(std::move(piece));
  }

  bool should_stop() const { return stops.stopped() || job->cancelled_ || *stopping; }

  void on_done(runtime::Generation&& g, const std::string& error) {
    if (decoder) {
      EnginePiece tail;
      if (!stops.stopped()) tail.text = stops.push(decoder->finish());
      tail.text += stops.finish();
      emit(std::move(tail));
    }
    FinishedRequest record;
    {
      std::lock_guard<std::mutex> lock(job->mu_);
      EngineResult& r = job->result_;
      r.token_ids = g.tokens;
      r.logprobs = std::move(g.logprobs);
      r.completion_tokens = static_cast<int64_t>(g.tokens.size());
      // Cut by the server (a shutdown's drain ran out, the client went away): "abort", as vLLM
      // reports it, not "length", which says max_tokens or the context was reached.
      r.aborted = g.stats.stop == "caller" && !stops.stopped();
      r.finish_reason = r.aborted ? "abort" : (g.stats.stop == "eos" || stops.stopped()) ? "stop" : "length";
      if (stops.stopped()) r.stop_string = stops.matched();
      if (g.stats.stop == "eos" && !g.tokens.empty() &&
          std::find(stop_token_ids.begin(), stop_token_ids.end(), g.tokens.back()) != stop_token_ids.end())
        r.stop_token = g.tokens.back();
      r.total_s = seconds(started, Clock::now());
      job->error_ = error;
      record = {id, r.prompt_tokens, r.completion_tokens, r.finish_reason, r.ttft_s, r.total_s};
      if (!error.empty()) record.finish_reason = "error";
    }
    metrics->finished(record);
    if (log) {
      const std::string line = request_log_line(record) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    --*in_flight;
    // Done last: the waiting thread may read the result and let the job go at once.
    {
      std::lock_guard<std::mutex> lock(job->mu_);
      job->done_ = true;
    }
    waker->add(job);
  }
};

std::optional<std::string> served_names_problem(const std::vector<std::string>& names) {
  for (auto it = names.begin(); it != names.end(); ++it) {
    if (it->empty()) return "a served model name is empty";
    if (std::find(names.begin(), it, *it) != it)
      return fmt::format("'{}' is given twice (each served model name is listed once by /v1/models)", *it);
  }
  return std::nullopt;
}

Engine::Engine(const std::filesystem::path& model_dir, const EngineOptions& options)
    : Engine(model::ModelDir::open(model_dir), options) {}

Engine::Engine(model::ModelDir dir, const EngineOptions& options)
    : dir_(std::make_unique<model::ModelDir>(std::move(dir))) {
  tokenizer_ = load_tokenizer(*dir_);
  runtime::resolve_program(*dir_, options.program, options.max_seq);  // at --max-seq where the program binds only there
  config_ = dir_->config;
  // What the program binds, which is what the lane runs: its context (GPT-2's n_positions) and
  // the width of its logits.
  config_.max_position_embeddings = dir_->context;
  config_.vocab_size = dir_->vocab;
  generation_ = dir_->generation;
  // Generation stops on the tokenizer's eos token too, as vLLM's does (not with ignore_eos).
  if (tokenizer_) model::add_eos_token_id(generation_, tokenizer_->eos_id());
  model_dir_ = dir_->dir;
  const auto norm = dir_->dir.lexically_normal();
  model_id_ = (norm.has_filename() ? norm.filename() : norm.parent_path().filename()).string();
  model_path_ = dir_->dir.string();
  context_ = resolve_context(options, config_.max_position_embeddings, runtime::context_origin(*dir_));
  LaneOptions lo = options.lane_options;
  lo.max_seq = context_;
  init(make_lane(options.lane, *dir_, lo), options);
}

namespace {
std::unique_ptr<Lane> random_lane(const RandomModel& model, const EngineOptions& options) {
  LaneOptions lo = options.lane_options;
  lo.max_seq = resolve_context(options, model.config.max_position_embeddings, "max_position_embeddings in config.json");
  return make_random_lane(options.lane, model.config, model.seed, lo);
}
}  // namespace

Engine::Engine(const RandomModel& model, const EngineOptions& options)
    : Engine(random_lane(model, options), model.config, model.name, options) {}

Engine::Engine(std::unique_ptr<Lane> lane, const model::ModelConfig& config, std::string model_id,
               const EngineOptions& options) {
  config_ = config;
  model_id_ = std::move(model_id);
  context_ = lane->limits().max_seq;
  init(std::move(lane), options);
}

bool Engine::serves(const std::string& name) const {
  if (!served_names_.empty()) return std::find(served_names_.begin(), served_names_.end(), name) != served_names_.end();
  if (name == model_id_) return true;
  if (model_path_.empty()) return false;
  // The directory as given, with or without a trailing slash or a leading ./
  const auto norm = [](const std::string& p) {
    std::string n = std::filesystem::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  return norm(name) == norm(model_path_);
}

std::vector<std::string> Engine::served_names() const {
  return served_names_.empty() ? std::vector<std::string>{model_id_} : served_names_;
}

void Engine::init(std::unique_ptr<Lane> lane, const EngineOptions& options) {
  if (options.max_waiting < 1) throw Error(fmt::format("max waiting requests must be >= 1, got {}", options.max_waiting));
  if (auto problem = served_names_problem(options.served_model_names))
    throw Error("served model names: " + *problem);
  served_names_ = options.served_model_names;
  if (!served_names_.empty()) model_id_ = served_names_.front();
  max_waiting_ = options.max_waiting;
  log_requests_ = options.log_requests;
  lane_ = std::move(lane);
  runtime::SchedulerOptions so;
  so.prefix_cache = options.prefix_cache;
  scheduler_ = std::make_unique<runtime::Scheduler>(*lane_, so);
  publish_stats();
  worker_ = std::thread([this] { work(); });
}

Engine::~Engine() {
  cancel_all();
  worker_.join();
}

const tokenizer::Tokenizer& Engine::tokenizer() const {
  if (!tokenizer_) throw Error("the model '" + model_id_ + "' has no tokenizer (random weights, or no tokenizer.json)");
  return *tokenizer_;
}

void Engine::cancel_all() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

std::vector<int32_t> Engine::encode_prompt(const std::string& prompt, const std::string& param,
                                           bool add_special_tokens) const {
  if (!tokenizer_)
    throw RequestError(param, fmt::format("'{}' must be token ids: the model '{}' is served without a tokenizer (random "
                                          "weights, lg serve --shape, or a model directory with no tokenizer.json)",
                                          param, model_id_));
  std::vector<int32_t> ids;
  try {
    ids = add_special_tokens ? tokenizer_->encode_with_special_tokens(prompt) : tokenizer_->encode(prompt);
  } catch (const Error& e) {
    throw RequestError(param, fmt::format("'{}' cannot be tokenized: {}", param, e.what()));
  }
  if (ids.empty()) throw RequestError(param, fmt::format("'{}' encodes to no tokens", param));
  if (const auto id = runtime::first_out_of_vocab(ids, config_.vocab_size))
    throw RequestError(param, fmt::format("'{}' has token id {}, outside the model's vocabulary of {} ids: the model "
                                          "directory's tokenizer.json does not belong to its checkpoint",
                                          param, *id, config_.vocab_size));
  check_prompt(ids, param);
  return ids;
}

namespace {
// The 400 for element i of a request's array of token ids (`prompt`, `stop_token_ids`) that the
// vocabulary of V ids does not hold, naming it (`prompt[2]`).
RequestError id_outside_vocab(const std::string& field, size_t i, int64_t id, int64_t V) {
  const std::string at = fmt::format("{}[{}]", field, i);
  return RequestError(at, fmt::format("'{}' is token id {}, outside the model's vocabulary of {} ids (0 to {})", at, id,
                                      V, V - 1));
}
}  // namespace

void Engine::check_prompt(const std::vector<int32_t>& ids, const std::string& param) const {
  if (ids.empty()) throw RequestError(param, fmt::format("'{}' is empty", param));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config_.vocab_size) throw id_outside_vocab(param, i, ids[i], config_.vocab_size);
  const auto n = static_cast<int64_t>(ids.size());
  if (auto e = runtime::prompt_context_error(n, context_, "'" + param + "'")) throw RequestError(param, std::move(*e));
  if (n >= limits().pool_tokens())
    throw RequestError(param, fmt::format("'{}' has {} tokens, {} the KV cache holds ({} tokens)", param, n,
                                          n == limits().pool_tokens() ? "all" : "more than", limits().pool_tokens()));
}

void Engine::check_max_tokens(int64_t prompt_tokens, const GenerationRequest& request) const {
  if (!request.max_tokens) return;
  const std::string& field = request.max_tokens_field;
  const int64_t max = *request.max_tokens;
  if (auto e = runtime::completion_context_error(prompt_tokens, max, context_, "'" + field + "'"))
    throw RequestError(field, std::move(*e));
  // The pool holds at least one context (resolve_limits), except for a lane a caller built.
  if (max > limits().pool_tokens() - prompt_tokens)
    throw RequestError(field, fmt::format("'{}' is {} and the prompt has {}: together more than the KV cache "
                                          "holds ({} tokens)",
                                          field, max, count_noun(prompt_tokens, "token"), limits().pool_tokens()));
}

int64_t Engine::max_new_tokens(int64_t prompt_tokens, const GenerationRequest& request,
                               int64_t default_max_tokens) const {
  // The room after the prompt, in the context and in the KV pool (a request alone always fits):
  // usage then never counts past the context (check_prompt leaves at least one token).
  const int64_t room = std::max<int64_t>(std::min(context_, limits().pool_tokens()) - prompt_tokens, 1);
  // Without a default of the endpoint's own (chat), generation_config.json's max_new_tokens is
  // the default, as vLLM's `--generation-config auto` makes it; else the rest of the context.
  const int64_t fallback_max =
      default_max_tokens > 0 ? default_max_tokens : generation_.max_new_tokens.value_or(room);
  return std::min(request.max_tokens.value_or(fallback_max), room);
}

void Engine::check_sampling(int64_t prompt_tokens, const GenerationRequest& request, int64_t default_max_tokens) const {
  const int64_t V = config_.vocab_size;
  for (const auto& [id, bias] : request.logit_bias)
    if (id >= V)
      throw RequestError("logit_bias", fmt::format("'logit_bias' names token id {}, outside the model's vocabulary of "
                                                   "{} ids (0 to {})",
                                                   id, V, V - 1));
  for (size_t i = 0; i < request.stop_token_ids.size(); ++i)
    if (request.stop_token_ids[i] >= V) throw id_outside_vocab("stop_token_ids", i, request.stop_token_ids[i], V);
  if (request.min_tokens > 0) {
    const int64_t most = max_new_tokens(prompt_tokens, request, default_max_tokens);
    if (request.min_tokens > most)
      throw RequestError("min_tokens",
                         fmt::format("'min_tokens' is {}, more than the {} this request may generate ({})",
                                     request.min_tokens, count_noun(most, "token"),
                                     request.max_tokens ? "its " + request.max_tokens_field
                                                        : "the default max_tokens, cut to the room the context leaves"));
  }
}

uint64_t JobGroup::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

void JobGroup::wait_past(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return events_ != seen; });
}

void JobGroup::notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++events_;
  }
  cv_.notify_all();
}

bool EngineJob::wait(EnginePiece& piece, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !pending_.empty(); });
  piece.text += pending_.text;
  piece.token_ids.insert(piece.token_ids.end(), pending_.token_ids.begin(), pending_.token_ids.end());
  for (auto& lp : pending_.logprobs) piece.logprobs.push_back(std::move(lp));
  pending_ = {};
  return done_;
}

bool EngineJob::wait(std::string& text, std::chrono::milliseconds timeout) {
  EnginePiece piece;
  const bool done = wait(piece, timeout);
  text += piece.text;
  return done;
}

EngineResult EngineJob::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) throw Error(error_);
  return result_;
}

std::shared_ptr<EngineJob> Engine::start(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                                         int64_t default_max_tokens, const std::string& id,
                                         std::shared_ptr<JobGroup> group) {
  const JobSpec spec{request, id};
  return start_all(prompt_ids, std::span<const JobSpec>(&spec, 1), default_max_tokens, std::move(group)).front();
}

std::vector<std::shared_ptr<EngineJob>> Engine::start_all(const std::vector<int32_t>& prompt_ids,
                                                          std::span<const JobSpec> specs, int64_t default_max_tokens,
                                                          std::shared_ptr<JobGroup> group) {
  std::vector<std::shared_ptr<EngineJob>> jobs;
  std::vector<std::unique_ptr<runtime::Request>> reqs;
  for (const JobSpec& spec : specs) {
    jobs.push_back(std::make_shared<EngineJob>());
    reqs.push_back(prepare_job(jobs.back(), prompt_ids, spec.request, default_max_tokens, spec.id, group));
  }
  admit(reqs);
  return jobs;
}

std::unique_ptr<runtime::Request> Engine::prepare_job(const std::shared_ptr<EngineJob>& job,
                                                      const std::vector<int32_t>& prompt_ids,
                                                      const GenerationRequest& request, int64_t default_max_tokens,
                                                      const std::string& id, std::shared_ptr<JobGroup> group) {
  const auto& gc = generation_;
  job->group_ = std::move(group);
  auto req = std::make_unique<runtime::Request>();
  req->prompt = prompt_ids;
  runtime::GenerateOptions& gen = req->options;
  const auto n = static_cast<int64_t>(prompt_ids.size());
  gen.max_new_tokens = max_new_tokens(n, request, default_max_tokens);
  // The ids that end the request: the model's eos (unless ignore_eos) and the request's
  // stop_token_ids; min_tokens holds back those the vocabulary has until it is reached.
  std::vector<int64_t> stop_ids;
  if (!request.ignore_eos) stop_ids = gc.eos_token_ids;
  stop_ids.insert(stop_ids.end(), request.stop_token_ids.begin(), request.stop_token_ids.end());
  gen.eos_ids = stop_ids;
  // Absent fields take generation_config.json's defaults, as vLLM does and as `lg run` does.
  gen.sampling.temperature = request.temperature.value_or(gc.do_sample ? gc.temperature : 0.0);
  gen.sampling.top_k = request.top_k.value_or(gc.top_k);
  gen.sampling.top_p = request.top_p.value_or(gc.top_p);
  // The model's repetition_penalty and min_p apply to greedy requests too (a penalty changes the
  // argmax), as vLLM applies them; presence and frequency penalties have no config default there.
  gen.sampling.min_p = request.min_p.value_or(gc.min_p);
  gen.sampling.penalties.repetition = request.repetition_penalty.value_or(gc.repetition_penalty);
  gen.sampling.penalties.presence = request.presence_penalty.value_or(0.0);
  gen.sampling.penalties.frequency = request.frequency_penalty.value_or(0.0);
  gen.sampling.seed = request.seed ? *request.seed : std::random_device{}();
  gen.sampling.logit_bias = request.logit_bias;
  gen.sampling.min_tokens = request.min_tokens;
  for (const int64_t stop_id : stop_ids)
    if (stop_id >= 0 && stop_id < config_.vocab_size)
      gen.sampling.min_tokens_held.push_back(static_cast<int32_t>(stop_id));
  job->result_.prompt_tokens = n;

  // The request's state lives with its callbacks, which run on the worker only.
  auto state = std::make_shared<JobState>(request.stop);
  state->job = job;
  state->eos = stop_ids;
  for (const int32_t t : request.stop_token_ids)
    if (request.ignore_eos || std::find(gc.eos_token_ids.begin(), gc.eos_token_ids.end(), t) == gc.eos_token_ids.end())
      state->stop_token_ids.push_back(t);
  state->min_tokens = request.min_tokens;
  state->stopping = &stopping_;
  state->in_flight = &in_flight_;
  state->metrics = &metrics_;
  state->waker = &waker_;
  state->id = id;
  state->log = log_requests_;
  state->prompt_tokens = n;
  state->started = Clock::now();
  if (tokenizer_) {
    state->decoder.emplace(*tokenizer_, request.skip_special_tokens);
    state->decoder->prime(prompt_ids);  // the completion continues the prompt's text (a SentencePiece "▁" keeps its space)
  }
  gen.logprobs = request.logprobs;
  if (request.logprobs >= 0)
    gen.on_logprobs = [state](const runtime::TokenLogprobs& lp) { state->next_logprobs = lp; };
  gen.on_token = [state](int32_t token) { state->on_token(token); };
  gen.should_stop = [state] { return state->should_stop(); };
  req->on_done = [state](runtime::Generation&& g, const std::string& error) { state->on_done(std::move(g), error); };
  return req;
}

void Engine::admit(std::vector<std::unique_ptr<runtime::Request>>& reqs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      metrics_.rejected("shutting_down");
      throw EngineBusy("shutting_down", "the server is shutting down");
    }
    // Waiting: not running and not about to run. Requests just handed over join the batch at the
    // next step while it has free slots and nothing waits before them (for KV blocks). All of
    // `reqs` are admitted or none: the choices of one request are one request to its client.
    const auto incoming = static_cast<int64_t>(incoming_.size()) + in_transit_;
    const int64_t free_slots = std::max<int64_t>(limits().max_batch - scheduler_running_, 0);
    auto waiting_with = [&](int64_t more) {
      return scheduler_waiting_ > 0 ? incoming + more + scheduler_waiting_
                                    : std::max<int64_t>(incoming + more - free_slots, 0);
    };
    const auto n = static_cast<int64_t>(reqs.size());
    if (waiting_with(n) > max_waiting_) {
      metrics_.rejected("queue_full");
      const int64_t waiting = waiting_with(0);
      const std::string already =
          fmt::format("{} {} waiting already", waiting, waiting == 1 ? "request is" : "requests are");
      throw EngineBusy("queue_full",
                       n == 1 ? fmt::format("the server is busy: {} (--max-waiting {}); retry later", already,
                                            max_waiting_)
                              : fmt::format("the server is busy: {}, and this request's {} choices ('n') would "
                                            "make {} (--max-waiting {}); retry later",
                                            already, n, waiting_with(n), max_waiting_));
    }
    for (auto& req : reqs) {
      incoming_.push_back(std::move(req));
      ++in_flight_;
    }
  }
  cv_.notify_all();
}

EngineResult EngineJob::follow(const std::function<bool(const EnginePiece&)>& on_piece,
                              const std::function<bool()>& cancelled) {
  bool client_gone = false;
  while (true) {
    EnginePiece piece;
    const bool done = wait(piece, std::chrono::milliseconds(50));
    if (!piece.empty() && !client_gone && on_piece && !on_piece(piece)) client_gone = true;
    if (!client_gone && cancelled && cancelled()) client_gone = true;
    if (client_gone) cancel();
    if (done) break;
  }
  return result();
}

EngineResult Engine::generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                              int64_t default_max_tokens, const std::function<bool(const EnginePiece&)>& on_piece,
                              const std::function<bool()>& cancelled, const std::string& id) {
  return start(prompt_ids, request, default_max_tokens, id)->follow(on_piece, cancelled);
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

// On the worker: the scheduler's counters, for stats() and the waiting-queue bound.
void Engine::publish_stats() {
  const runtime::SchedulerStats st = scheduler_->stats();
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.running = st.running;
  stats_.kv_blocks_used = st.kv_blocks_used;
  stats_.kv_blocks_free = st.kv_blocks_free;
  stats_.kv_block_size = st.kv_block_size;
  stats_.preemptions = st.preemptions;
  stats_.steps = st.steps;
  stats_.prefix_cache = st.prefix_cache;
  stats_.kv_blocks_cached_free = st.kv_blocks_cached_free;
  stats_.prefix_cache_queries = st.prefix_cache_queries;
  stats_.prefix_cache_hits = st.prefix_cache_hits;
  stats_.prefix_cache_evictions = st.prefix_cache_evictions;
  stats_.prompt_tokens_computed = st.prompt_tokens_computed;
  {
    // The requests handed over but not yet taken by the worker are waiting too.
    std::lock_guard<std::mutex> in(mu_);
    stats_.waiting = scheduler_->waiting() + static_cast<int64_t>(incoming_.size());
    scheduler_waiting_ = scheduler_->waiting();
    scheduler_running_ = scheduler_->running();
    in_transit_ = 0;
  }
}

// The worker: takes new requests into the scheduler and steps while any is waiting or running.
void Engine::work() {
  while (true) {
    std::vector<std::unique_ptr<runtime::Request>> fresh;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !incoming_.empty() || scheduler_->waiting() + scheduler_->running() > 0;
      });
      fresh.swap(incoming_);
      in_transit_ = static_cast<int64_t>(fresh.size());  // counted until the step after it is published
      if (stopping_ && fresh.empty() && scheduler_->waiting() + scheduler_->running() == 0) return;
    }
    for (auto& r : fresh) {
      auto on_done = r->on_done;
      try {
        scheduler_->submit(std::move(*r));
      } catch (const Error& e) {
        on_done(runtime::Generation{}, e.what());
      }
    }
    try {
      scheduler_->step();
    } catch (const std::exception& e) {
      // A fault of the scheduler itself (a lane error ends its step's requests inside step()).
      // The requests in flight end with it, as a lane error ends them, and their clients get the
      // error; left queued, they met the same fault at every step, and the worker retried
      // forever while their clients waited. Requests that come later are still served.
      std::fprintf(stderr, "lg: engine step failed: %s\n", e.what());
      scheduler_->fail_all(e.what());
    }
    publish_stats();
    waker_.flush();  // the step's output is out: its followers wake while the next step runs
  }
}

JobWaker::JobWaker() : thread_([this] { run(); }) {}

JobWaker::~JobWaker() {
  flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void JobWaker::add(const std::shared_ptr<EngineJob>& job) {
  if (queued_.empty() || queued_.back() != job) queued_.push_back(job);  // a job's token and end: one wake
}

void JobWaker::flush() {
  if (queued_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handed_.insert(handed_.end(), std::make_move_iterator(queued_.begin()),
                   std::make_move_iterator(queued_.end()));
  }
  queued_.clear();
  cv_.notify_one();
}

void JobWaker::run() {
  std::vector<std::shared_ptr<EngineJob>> batch;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !handed_.empty(); });
      if (handed_.empty()) return;  // stopping, nothing left to wake
      batch.swap(handed_);
    }
    for (const auto& job : batch) job->wake();
    batch.clear();
  }
}

}  // namespace lg::server
