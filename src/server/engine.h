// The model behind lg serve and lg batch: one lane, its tokenizer and generation defaults, and
// the scheduler (runtime/scheduler.h) that runs every request in flight together, in batched
// steps on one worker thread. Turns a prompt into text with the OpenAI semantics the endpoints
// need: stop strings, finish_reason "stop"/"length", token usage. The threads that submit
// requests (HTTP handlers, lg batch) never touch the lane: they hand a request to the worker
// and take its text as it comes, so a slow client never holds up a step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/model_dir.h"
#include "runtime/lane.h"
#include "server/request.h"
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
};

/// What one request produced.
struct EngineResult {
  std::string text;           ///< the generated text, cut before a stop string, without the eos token
  std::string finish_reason;  ///< "stop" (eos or stop string) or "length" (max_tokens or context full)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  ///< tokens generated, the eos token included
};

/// A request handed to the engine: its text arrives in pieces until it is done.
class EngineJob {
 public:
  /// Waits up to `timeout` for more text or the end. Appends the text produced since the last
  /// call to `piece` and returns true once the request is done (the text is then complete).
  bool wait(std::string& piece, std::chrono::milliseconds timeout);
  /// Asks the engine to stop this request at its next token (its client went away).
  void cancel() { cancelled_ = true; }
  /// The result, once wait() returned true. Throws lg::Error if the request failed in the lane.
  EngineResult result() const;

 private:
  friend class Engine;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool done_ = false;
  EngineResult result_;
  std::string error_;
  std::atomic<bool> cancelled_{false};
};

class Engine {
 public:
  /// Opens the model directory, builds the lane and starts the worker. Throws lg::Error for a bad
  /// directory, a missing tokenizer.json, an unknown lane or a max_seq beyond
  /// max_position_embeddings.
  Engine(const std::filesystem::path& model_dir, const EngineOptions& options);
  /// Stops the worker; requests still running end with finish_reason "length".
  ~Engine();

  /// The served model's id: the model directory's last component.
  const std::string& model_id() const { return model_id_; }
  /// Context length in tokens (prompt + completion).
  int64_t context() const { return context_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  /// The model directory (the chat template is read from it).
  const std::filesystem::path& model_dir() const { return dir_.dir; }
  const LaneLimits& limits() const { return lane_->limits(); }

  /// Tokenizes `prompt`: with the special tokens the model expects around it (BOS; none for Qwen)
  /// when `add_special_tokens`, as for a completion prompt, else as written (a rendered chat
  /// template already holds them). Throws RequestError(param) if it encodes to nothing or to more
  /// tokens than the context or the KV pool holds (naming both lengths).
  std::vector<int32_t> encode_prompt(const std::string& prompt, const std::string& param,
                                     bool add_special_tokens = false) const;

  /// Hands a request to the worker; it joins the running batch at the next step.
  /// `default_max_tokens` applies when the request has none (the rest of the context when 0).
  std::shared_ptr<EngineJob> start(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                                   int64_t default_max_tokens);

  /// start(), then the text as it comes: `on_text` gets each piece as it becomes final and
  /// returns false to stop early (client gone); `cancelled`, when set, is polled while waiting
  /// and ends the request when true (a non-streaming client that hung up). Throws lg::Error when
  /// the request failed in the lane.
  EngineResult generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                        int64_t default_max_tokens, const std::function<bool(const std::string&)>& on_text,
                        const std::function<bool()>& cancelled = {});

 private:
  void work();

  model::ModelDir dir_;
  tokenizer::Tokenizer tokenizer_;
  std::string model_id_;
  int64_t context_ = 0;
  std::unique_ptr<Lane> lane_;
  std::unique_ptr<runtime::Scheduler> scheduler_;  ///< the worker's alone
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<runtime::Request>> incoming_;
  std::atomic<bool> stopping_{false};  ///< written under mu_, read by the worker's callbacks too
  std::thread worker_;
};

}  // namespace lg::server
