// The model behind lg serve and lg batch: one lane, its tokenizer and generation defaults, and
// the scheduler (runtime/scheduler.h) that runs every request in flight together, in batched
// steps on one worker thread. Turns a prompt into text with the OpenAI semantics the endpoints
// need: stop strings, finish_reason "stop"/"length"/"abort", token usage. The threads that submit
// requests (HTTP handlers, lg batch) never touch the lane: they hand a request to the worker
// and take its text as it comes, so a slow client never holds up a step, and a step never holds
// up a thread that answers /health or /metrics.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "model/model_dir.h"
#include "runtime/lane.h"
#include "runtime/logprobs.h"
#include "server/request.h"
#include "server/serve_metrics.h"
#include "support/error.h"
#include "tokenizer/tokenizer.h"

namespace lg::runtime {
class Scheduler;
struct Request;
}

namespace lg::server {

struct EngineOptions {
  std::string lane = "cpu";  ///< lane name (lanes/factory.h)
  int64_t max_seq = 0;       ///< context per request in tokens; 0: min(max_position_embeddings, 4096)
  LaneOptions lane_options;  ///< KV pool and step sizes (its max_seq is taken from max_seq above)
  /// Requests submitted but not running yet (waiting for the batch or for KV blocks) beyond which
  /// start() refuses a request with EngineBusy (lg serve: a 503). Requests that join the batch
  /// at the next step (free batch slots, nothing waiting before them) do not count. At least 1.
  int64_t max_waiting = 512;
  /// One line per finished request on stderr (serve_metrics.h, request_log_line).
  bool log_requests = false;
  /// Share the KV blocks of equal prompt prefixes between requests (runtime/scheduler.h).
  bool prefix_cache = true;
  /// The .lg program to run the model with (`--program`); empty: the one its model_type names.
  std::filesystem::path program;
  /// The names requests may give as `model` (`--served-model-name`, as vLLM's): /v1/models lists
  /// each, and the first is the id answers carry. Empty: the model directory's last component is
  /// the id, and the directory as given on the command line is accepted too (vLLM's default name
  /// is that path).
  std::vector<std::string> served_model_names;
};

/// What is wrong with `names` as EngineOptions::served_model_names, or none: a name that is empty,
/// or one given twice (GET /v1/models would list it twice), named ("'a' is given twice ...").
std::optional<std::string> served_names_problem(const std::vector<std::string>& names);

/// A model with deterministic random weights at a preset shape, made on the GPU (`lg serve
/// --shape`): no directory, no tokenizer, so prompts come as token ids and answers as token ids.
struct RandomModel {
  std::string name;             ///< the served model id ("qwen3-8b")
  model::ModelConfig config;    ///< the shape
  uint64_t seed = 20261129;
};

/// The engine cannot take a request now: its waiting queue is full, or it is shutting down.
/// lg serve answers 503 with Retry-After.
class EngineBusy : public Error {
 public:
  EngineBusy(std::string reason, const std::string& message) : Error(message), reason_(std::move(reason)) {}
  /// "queue_full" or "shutting_down".
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// What one request produced.
struct EngineResult {
  /// The generated text, cut before a stop string, without the eos token that ended it, and
  /// without special tokens unless the request keeps them (GenerationRequest::skip_special_tokens).
  /// With ignore_eos an eos token is text like any other (shown with skip_special_tokens false).
  std::string text;
  std::vector<int32_t> token_ids;  ///< every generated id, the eos included (as completion_tokens counts)
  /// One per token id when the request asked for log probabilities (GenerationRequest::logprobs).
  std::vector<runtime::TokenLogprobs> logprobs;
  /// "stop" (eos or stop string), "length" (max_tokens or context full) or "abort" (cancelled:
  /// the client went away, or a shutdown cut it), as vLLM names them.
  std::string finish_reason;
  /// What vLLM calls stop_reason, with finish_reason "stop": the stop string that cut the text, or
  /// the id of the request's stop_token_ids that ended it (one of the model's eos ids: neither).
  std::optional<std::string> stop_string;
  std::optional<int32_t> stop_token;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  ///< tokens generated, the eos token included
  bool aborted = false;           ///< ended early because it was cancelled (client gone, shutdown)
  double ttft_s = -1;             ///< seconds from start() to the first token; < 0 when none came
  double total_s = 0;             ///< seconds from start() to the end
};

/// Text and ids produced since the last look.
struct EnginePiece {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<runtime::TokenLogprobs> logprobs;  ///< one per token id, when the request asked
  bool empty() const { return text.empty() && token_ids.empty(); }
};

/// A wake-up shared by several jobs (the choices of a request with n > 1): each piece of output
/// and each end of one of them wakes a thread that waits on the group, so one thread can follow
/// them all (follow_choices, server/openai.h).
class JobGroup {
 public:
  /// Events so far: read before looking at the jobs, then wait_past() it.
  uint64_t events() const;
  /// Waits up to `timeout` until an event after the first `seen`.
  void wait_past(uint64_t seen, std::chrono::milliseconds timeout);
  void notify();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t events_ = 0;
};

/// A request handed to the engine: its text arrives in pieces until it is done.
class EngineJob {
 public:
  /// Waits up to `timeout` for more output or the end. Appends what was produced since the last
  /// call to `piece` and returns true once the request is done (its output is then complete).
  bool wait(EnginePiece& piece, std::chrono::milliseconds timeout);
  /// The same for the text alone.
  bool wait(std::string& text, std::chrono::milliseconds timeout);
  /// Asks the engine to stop this request at its next token (its client went away).
  void cancel() { cancelled_ = true; }
  /// The result, once wait() returned true. Throws lg::Error if the request failed in the lane.
  EngineResult result() const;
  /// Waits for the output as it comes until the end: `on_piece` gets each piece as it becomes
  /// final and returns false to stop early (client gone); `cancelled`, when set, is polled while
  /// waiting (every 50 ms at most) and ends the request when true (a non-streaming client that
  /// hung up). Returns result().
  EngineResult follow(const std::function<bool(const EnginePiece&)>& on_piece,
                      const std::function<bool()>& cancelled = {});

 private:
  friend class Engine;
  friend struct JobState;
  friend class JobWaker;
  /// Wakes whoever waits on the job or its group (after its state changed under mu_).
  void wake() {
    cv_.notify_all();
    if (group_) group_->notify();
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  EnginePiece pending_;
  bool done_ = false;
  EngineResult result_;
  std::string error_;
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<JobGroup> group_;  ///< woken with cv_, when the job is one of several choices
};

/// Wakes the threads that follow jobs (EngineJob::wait, JobGroup) on a thread of its own, so that
/// the engine's worker, which gives up to max_batch jobs their output each step, does not also
/// pay a wake-up (a futex call, another thread scheduled) for each of them between two steps:
/// the worker queues the jobs its step touched (add) and hands them over at once (flush).
class JobWaker {
 public:
  JobWaker();
  /// Wakes what is still queued, then stops the thread.
  ~JobWaker();
  JobWaker(const JobWaker&) = delete;
  JobWaker& operator=(const JobWaker&) = delete;
  /// Queues `job` to be woken at the next flush. The worker's alone (not thread-safe).
  void add(const std::shared_ptr<EngineJob>& job);
  /// Hands the queued jobs to the waking thread. The worker's alone.
  void flush();

 private:
  void run();
  std::vector<std::shared_ptr<EngineJob>> queued_;  ///< the worker's, since the last flush
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<EngineJob>> handed_;  ///< under mu_: flushed, not yet woken
  bool stop_ = false;                                ///< under mu_
  std::thread thread_;                               ///< last: starts once the rest is built
};

class Engine {
 public:
  /// Opens the model directory, builds the lane and starts the worker. Without a tokenizer.json
  /// the model takes token-id prompts only (as random weights). Throws lg::Error for a bad
  /// directory, an unreadable tokenizer, an unknown lane or a max_seq beyond
  /// max_position_embeddings.
  Engine(const std::filesystem::path& model_dir, const EngineOptions& options);
  /// The same for a directory its caller opened already (model::ModelDir::open), so that what the
  /// caller checked in it before the load (lg serve: a tokenizer for --chat-template) is not read
  /// twice.
  Engine(model::ModelDir dir, const EngineOptions& options);
  /// Random weights at `model`'s shape on GPU lane options.lane (lanes/factory.h,
  /// make_random_lane). Throws lg::Error for the cpu lane, no CUDA device, or a bad max_seq.
  Engine(const RandomModel& model, const EngineOptions& options);
  /// Serves `lane`, built by the caller for the model `config` describes (the caller keeps what
  /// the lane reads alive), as `model_id`, without a tokenizer: prompts and answers are token ids.
  /// The context is the lane's max_seq; options.lane, max_seq and lane_options are not used.
  Engine(std::unique_ptr<Lane> lane, const model::ModelConfig& config, std::string model_id,
         const EngineOptions& options);
  /// Stops the worker; requests still running end with finish_reason "abort".
  ~Engine();

  /// The served model's id: the model directory's last component (or the shape's name).
  const std::string& model_id() const { return model_id_; }
  /// Whether a request's `model` names this model: one of its served names (EngineOptions), or
  /// without them its id or the model directory as given.
  bool serves(const std::string& name) const;
  /// The ids /v1/models lists, as vLLM lists each served name: the served names, or the id alone.
  std::vector<std::string> served_names() const;
  /// Context length in tokens (prompt + completion).
  int64_t context() const { return context_; }
  /// The model's vocabulary size (config.json's vocab_size): token ids are below it.
  int64_t vocab_size() const { return config_.vocab_size; }
  /// Whether prompts can be text (false for random weights: token ids only).
  bool has_tokenizer() const { return tokenizer_.has_value(); }
  /// The tokenizer. Throws lg::Error when there is none (has_tokenizer()).
  const tokenizer::Tokenizer& tokenizer() const;
  /// The model directory (the chat template is read from it); empty for random weights.
  const std::filesystem::path& model_dir() const { return model_dir_; }
  const LaneLimits& limits() const { return lane_->limits(); }
  /// The decoding defaults requests take where they leave a field out (generation_config.json's,
  /// its eos ids with the tokenizer's; the neutral ones for random weights).
  const model::GenerationConfig& generation() const { return generation_; }

  /// Tokenizes `prompt`: with the special tokens the model expects around it (BOS; none for Qwen)
  /// when `add_special_tokens`, as for a completion prompt, else as written (a rendered chat
  /// template already holds them). Throws RequestError(param) if there is no tokenizer, or as
  /// check_prompt().
  std::vector<int32_t> encode_prompt(const std::string& prompt, const std::string& param,
                                     bool add_special_tokens = false) const;
  /// Checks prompt ids (from encode_prompt, or sent as ids): not empty, every id in the
  /// vocabulary, and shorter than the context and the KV pool, so at least one token can be
  /// generated within both. Throws RequestError(param) naming the sizes (or `param[i]`, the id).
  void check_prompt(const std::vector<int32_t>& ids, const std::string& param) const;
  /// Checks a request's explicit max_tokens against a prompt of `prompt_tokens` (checked by
  /// check_prompt): prompt and completion together must fit the context and the KV pool, as vLLM
  /// requires, rather than the completion being cut short unasked. Throws RequestError naming
  /// request.max_tokens_field, the prompt's length, max_tokens and the context. An absent
  /// max_tokens passes: its default is cut to the room left (start()).
  void check_max_tokens(int64_t prompt_tokens, const GenerationRequest& request) const;
  /// Checks what the request's sampling fields name against the model: every logit_bias and
  /// stop_token_ids id in the vocabulary, and min_tokens at most the tokens the request may
  /// generate after a prompt of `prompt_tokens` (max_new_tokens()), as vLLM's SamplingParams
  /// requires. Throws RequestError naming the field.
  void check_sampling(int64_t prompt_tokens, const GenerationRequest& request, int64_t default_max_tokens) const;
  /// The most tokens a request may generate after a prompt of `prompt_tokens`: its max_tokens, else
  /// `default_max_tokens` (when 0: generation_config.json's max_new_tokens, else the rest of the
  /// context), cut to the room the context and the KV pool leave after the prompt.
  int64_t max_new_tokens(int64_t prompt_tokens, const GenerationRequest& request, int64_t default_max_tokens) const;

  /// Hands a request to the worker; it joins the running batch at the next step.
  /// `default_max_tokens` applies when the request has none (when 0: generation_config.json's
  /// max_new_tokens, else the rest of the context); absent sampling fields take
  /// generation_config.json's values (temperature, top_k, top_p, min_p, repetition_penalty);
  /// either is cut to the room the context and the KV pool leave after the prompt, so usage never
  /// counts past the context (an explicit max_tokens that does not fit is refused before, by
  /// check_max_tokens, which prepare_request calls). `id` names the request in metrics and logs;
  /// `group`, when given, is woken with the job (JobGroup). Throws EngineBusy when max_waiting
  /// requests are already waiting or the engine is shutting down.
  std::shared_ptr<EngineJob> start(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                                   int64_t default_max_tokens, const std::string& id = "",
                                   std::shared_ptr<JobGroup> group = nullptr);

  /// One of start_all's jobs: its request and its name in metrics and logs.
  struct JobSpec {
    GenerationRequest request;
    std::string id;
  };
  /// start() for several jobs of one prompt (a request's `n` choices), all admitted or none: one
  /// EngineBusy for the lot, naming the waiting they would make, with nothing started, logged or
  /// counted but the rejection. Returns the jobs in the specs' order.
  std::vector<std::shared_ptr<EngineJob>> start_all(const std::vector<int32_t>& prompt_ids,
                                                    std::span<const JobSpec> specs, int64_t default_max_tokens,
                                                    std::shared_ptr<JobGroup> group = nullptr);

  /// start(), then EngineJob::follow(). Throws lg::Error when the request failed in the lane,
  /// EngineBusy as start().
  EngineResult generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                        int64_t default_max_tokens, const std::function<bool(const EnginePiece&)>& on_piece,
                        const std::function<bool()>& cancelled = {}, const std::string& id = "");

  /// The scheduler's state as of the last step (running, waiting, KV blocks, preemptions).
  EngineStats stats() const;
  /// The bound on waiting requests (EngineOptions::max_waiting).
  int64_t max_waiting() const { return max_waiting_; }
  /// Requests started and not yet done.
  int64_t in_flight() const { return in_flight_; }
  /// Counters and histograms of the requests run (`GET /metrics`).
  ServeMetrics& metrics() { return metrics_; }
  /// Ends every request at its next token and refuses new ones (EngineBusy "shutting_down"):
  /// the end of a graceful shutdown whose time ran out.
  void cancel_all();

 private:
  void init(std::unique_ptr<Lane> lane, const EngineOptions& options);
  /// The scheduler's request for `job` (its callbacks write to it); not yet handed over.
  std::unique_ptr<runtime::Request> prepare_job(const std::shared_ptr<EngineJob>& job,
                                                const std::vector<int32_t>& prompt_ids,
                                                const GenerationRequest& request, int64_t default_max_tokens,
                                                const std::string& id, std::shared_ptr<JobGroup> group);
  /// Hands `reqs` to the worker, all or none (EngineBusy when the engine is stopping or they would
  /// take the waiting requests past max_waiting).
  void admit(std::vector<std::unique_ptr<runtime::Request>>& reqs);
  void work();
  void publish_stats();

  std::unique_ptr<model::ModelDir> dir_;  ///< null for random weights; the lane may read its weights
  model::ModelConfig config_;
  model::GenerationConfig generation_;
  std::optional<tokenizer::Tokenizer> tokenizer_;
  std::filesystem::path model_dir_;
  std::string model_id_;
  std::vector<std::string> served_names_;  ///< EngineOptions::served_model_names
  std::string model_path_;                 ///< the model directory as given (empty for random weights)
  int64_t context_ = 0;
  int64_t max_waiting_ = 0;
  bool log_requests_ = false;
  JobWaker waker_;  ///< declared before the requests' holders (scheduler_), so destroyed after them
  std::unique_ptr<Lane> lane_;
  std::unique_ptr<runtime::Scheduler> scheduler_;  ///< the worker's alone
  ServeMetrics metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<runtime::Request>> incoming_;
  std::atomic<bool> stopping_{false};  ///< written under mu_, read by the worker's callbacks too
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> scheduler_waiting_{0};  ///< the scheduler's waiting(), published by the worker
  std::atomic<int64_t> scheduler_running_{0};  ///< the scheduler's running(), published by the worker
  int64_t in_transit_ = 0;  ///< under mu_: taken from incoming_, not yet in a published step
  mutable std::mutex stats_mu_;
  EngineStats stats_;  ///< published by the worker after each step
  std::thread worker_;
};

}  // namespace lg::server
