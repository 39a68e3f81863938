#include "server/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "lanes/factory.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "server/stop_strings.h"
#include "support/error.h"

namespace lg::server {

namespace {

tokenizer::Tokenizer load_tokenizer(const model::ModelDir& dir) {
  if (!dir.tokenizer_json) throw Error(dir.dir.string() + ": no tokenizer.json; lg serve needs one to read prompts");
  return tokenizer::Tokenizer::from_file(*dir.tokenizer_json);
}

// The KV cache is allocated once for the server's life, so the default context is capped:
// a 32K-128K max_position_embeddings would reserve gigabytes for requests that rarely need it.
constexpr int64_t kDefaultContextCap = 4096;

}  // namespace

Engine::Engine(const std::filesystem::path& model_dir, const EngineOptions& options)
    : dir_(model::ModelDir::open(model_dir)), tokenizer_(load_tokenizer(dir_)) {
  const auto norm = model_dir.lexically_normal();
  model_id_ = (norm.has_filename() ? norm.filename() : norm.parent_path().filename()).string();
  const int64_t model_max = dir_.config.max_position_embeddings;
  context_ = options.max_seq > 0 ? options.max_seq : std::min(model_max, kDefaultContextCap);
  if (context_ > model_max)
    throw Error(fmt::format("--max-seq {} exceeds the model's context of {} tokens (max_position_embeddings)", context_,
                            model_max));
  LaneOptions lo = options.lane_options;
  lo.max_seq = context_;
  lane_ = make_lane(options.lane, dir_, lo);
  scheduler_ = std::make_unique<runtime::Scheduler>(*lane_);
  worker_ = std::thread([this] { work(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::vector<int32_t> Engine::encode_prompt(const std::string& prompt, const std::string& param,
                                           bool add_special_tokens) const {
  std::vector<int32_t> ids;
  try {
    ids = add_special_tokens ? tokenizer_.encode_with_special_tokens(prompt) : tokenizer_.encode(prompt);
  } catch (const Error& e) {
    throw RequestError(param, fmt::format("'{}' cannot be tokenized: {}", param, e.what()));
  }
  if (ids.empty()) throw RequestError(param, fmt::format("'{}' encodes to no tokens", param));
  if (const auto id = runtime::first_out_of_vocab(ids, dir_.config.vocab_size))
    throw RequestError(param, fmt::format("'{}' has token id {}, outside the model's vocabulary of {} ids: the model "
                                          "directory's tokenizer.json does not belong to its checkpoint",
                                          param, *id, dir_.config.vocab_size));
  if (static_cast<int64_t>(ids.size()) > context_)
    throw RequestError(param, fmt::format("'{}' has {} tokens, more than the context of {} tokens", param, ids.size(),
                                          context_));
  if (static_cast<int64_t>(ids.size()) > limits().pool_tokens())
    throw RequestError(param, fmt::format("'{}' has {} tokens, more than the KV cache holds ({} tokens)", param,
                                          ids.size(), limits().pool_tokens()));
  return ids;
}

bool EngineJob::wait(std::string& piece, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !pending_.empty(); });
  piece += pending_;
  pending_.clear();
  return done_;
}

EngineResult EngineJob::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) throw Error(error_);
  return result_;
}

std::shared_ptr<EngineJob> Engine::start(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                                         int64_t default_max_tokens) {
  const auto& gc = dir_.generation;
  auto job = std::make_shared<EngineJob>();
  auto req = std::make_unique<runtime::Request>();
  req->prompt = prompt_ids;
  runtime::GenerateOptions& gen = req->options;
  const auto room = context_ - static_cast<int64_t>(prompt_ids.size());
  gen.max_new_tokens = request.max_tokens.value_or(default_max_tokens > 0 ? default_max_tokens : std::max<int64_t>(room, 1));
  gen.eos_ids = gc.eos_token_ids;
  // Absent fields take generation_config.json's defaults, as vLLM does and as `lg run` does.
  gen.sampling.temperature = request.temperature.value_or(gc.do_sample ? gc.temperature : 0.0);
  gen.sampling.top_k = request.top_k.value_or(gc.top_k);
  gen.sampling.top_p = request.top_p.value_or(gc.top_p);
  gen.sampling.seed = request.seed ? *request.seed : std::random_device{}();
  job->result_.prompt_tokens = static_cast<int64_t>(prompt_ids.size());

  // The request's text state lives with its callbacks, which run on the worker only.
  struct Text {
    tokenizer::StreamDecoder decoder;
    StopMatcher stops;
    std::vector<int64_t> eos;
    Text(const tokenizer::Tokenizer& t, const std::vector<std::string>& s, std::vector<int64_t> e)
        : decoder(t), stops(s), eos(std::move(e)) {}
  };
  auto text = std::make_shared<Text>(tokenizer_, request.stop, gen.eos_ids);
  text->decoder.prime(prompt_ids);  // the completion continues the prompt's text (a SentencePiece "▁" keeps its space)
  auto emit = [job](const std::string& piece) {
    if (piece.empty()) return;
    {
      std::lock_guard<std::mutex> lock(job->mu_);
      job->pending_ += piece;
      job->result_.text += piece;
    }
    job->cv_.notify_all();
  };
  gen.on_token = [text, emit](int32_t id) {
    if (std::find(text->eos.begin(), text->eos.end(), id) != text->eos.end()) return;
    emit(text->stops.push(text->decoder.push(id)));
  };
  gen.should_stop = [text, job, this] {
    return text->stops.stopped() || job->cancelled_ || stopping_;
  };
  req->on_done = [text, job, emit](runtime::Generation&& g, const std::string& error) {
    if (!text->stops.stopped()) emit(text->stops.push(text->decoder.finish()));
    emit(text->stops.finish());
    {
      std::lock_guard<std::mutex> lock(job->mu_);
      job->result_.completion_tokens = static_cast<int64_t>(g.tokens.size());
      job->result_.finish_reason = (g.stats.stop == "eos" || text->stops.stopped()) ? "stop" : "length";
      job->error_ = error;
      job->done_ = true;
    }
    job->cv_.notify_all();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw Error("the server is shutting down");
    incoming_.push_back(std::move(req));
  }
  cv_.notify_all();
  return job;
}

EngineResult Engine::generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                              int64_t default_max_tokens, const std::function<bool(const std::string&)>& on_text,
                              const std::function<bool()>& cancelled) {
  auto job = start(prompt_ids, request, default_max_tokens);
  bool client_gone = false;
  while (true) {
    std::string piece;
    const bool done = job->wait(piece, std::chrono::milliseconds(50));
    if (!piece.empty() && !client_gone && on_text && !on_text(piece)) client_gone = true;
    if (!client_gone && cancelled && cancelled()) client_gone = true;
    if (client_gone) job->cancel();
    if (done) break;
  }
  return job->result();
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
      // A scheduler fault (not a lane error: those end their requests inside step()). Say it
      // and go on: the requests stay queued rather than the server going down.
      std::fprintf(stderr, "lg: engine step failed: %s\n", e.what());
    }
  }
}

}  // namespace lg::server
