#include "server/serve_metrics.h"

#include <fmt/format.h>

namespace lg::server {

namespace {

// Bucket bounds in seconds. TTFT and end-to-end as vLLM's (they span a 1 ms GPU prefill to
// minutes of queueing); inter-token latency as vLLM's with 1-5 ms added at the low end, where a
// GPU decode step lands.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                         0.3,   0.4,    0.5,   0.75,   1.0,  2.5,   5.0,  7.5,   10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                         30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Written with every label value known up front, zeros included, so a dashboard's rate() sees
// a series from the start.
const char* const kFinishReasons[] = {"stop", "length", "abort", "error"};
const char* const kRejectReasons[] = {"queue_full", "shutting_down"};

}  // namespace

std::string request_log_line(const FinishedRequest& r) {
  return fmt::format("lg: request {} prompt_tokens={} completion_tokens={} finish_reason={} ttft_s={} total_s={:.3f}",
                     r.id.empty() ? "-" : r.id, r.prompt_tokens, r.completion_tokens, r.finish_reason,
                     r.ttft_s < 0 ? std::string("-") : fmt::format("{:.3f}", r.ttft_s), r.total_s);
}

ServeMetrics::ServeMetrics() : ttft_(kTtftBuckets), itl_(kItlBuckets), e2e_(kE2eBuckets) {}

void ServeMetrics::first_token(int64_t prompt_tokens, double ttft_s) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt_tokens;
  ++generation_tokens_;
  ttft_.observe(ttft_s);
}

void ServeMetrics::next_token(double itl_s) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_tokens_;
  itl_.observe(itl_s);
}

void ServeMetrics::finished(const FinishedRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[r.finish_reason];
  e2e_.observe(r.total_s);
}

void ServeMetrics::rejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[reason];
}

std::string ServeMetrics::render(const EngineStats& s) const {
  prometheus::Writer w;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    w.family(name, help, "gauge");
    w.sample(name, v);
  };
  auto counter = [&](const std::string& name, const std::string& help, double v) {
    w.family(name, help, "counter");
    w.sample(name, v);
  };
  gauge("lg_num_requests_running", "Requests in the running batch.", static_cast<double>(s.running));
  gauge("lg_num_requests_waiting", "Requests waiting to run (queued, or preempted to be recomputed).",
        static_cast<double>(s.waiting));
  gauge("lg_kv_blocks_used", "KV-cache blocks held by requests.", static_cast<double>(s.kv_blocks_used));
  gauge("lg_kv_blocks_free", "KV-cache blocks free.", static_cast<double>(s.kv_blocks_free));
  gauge("lg_kv_block_size_tokens", "Positions per KV-cache block.", static_cast<double>(s.kv_block_size));
  const double total = static_cast<double>(s.kv_blocks_used + s.kv_blocks_free);
  gauge("lg_kv_cache_usage_ratio", "Fraction of the KV-cache blocks in use (0 to 1).",
        total > 0 ? static_cast<double>(s.kv_blocks_used) / total : 0.0);
  counter("lg_num_preemptions_total", "Requests preempted (their KV blocks freed, their tokens recomputed later).",
          static_cast<double>(s.preemptions));
  counter("lg_steps_total", "Batched steps run.", static_cast<double>(s.steps));
  // The prefix cache (vLLM's prefix_cache_queries and prefix_cache_hits, in tokens): the hit
  // rate over a window is rate(hits) / rate(queries); the ratio since start is given too.
  gauge("lg_prefix_cache_enabled", "1 when prefix caching is on.", s.prefix_cache ? 1.0 : 0.0);
  gauge("lg_kv_blocks_cached_free", "Free KV-cache blocks that hold a cached prefix (evictable).",
        static_cast<double>(s.kv_blocks_cached_free));
  counter("lg_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache (each request once).",
          static_cast<double>(s.prefix_cache_queries));
  counter("lg_prefix_cache_hits_total", "Prompt tokens found in the prefix cache (not computed).",
          static_cast<double>(s.prefix_cache_hits));
  gauge("lg_prefix_cache_hit_ratio", "Prefix-cache hits / queries since start (0 before any query).",
        s.prefix_cache_queries > 0 ? static_cast<double>(s.prefix_cache_hits) / static_cast<double>(s.prefix_cache_queries)
                                   : 0.0);
  counter("lg_prefix_cache_evictions_total", "Cached KV blocks evicted to hold other tokens.",
          static_cast<double>(s.prefix_cache_evictions));
  counter("lg_prompt_tokens_computed_total",
          "Prompt positions the lane computed (cache hits excluded, recomputation after preemption included).",
          static_cast<double>(s.prompt_tokens_computed));

  std::lock_guard<std::mutex> lock(mu_);
  counter("lg_prompt_tokens_total", "Prompt tokens prefilled.", static_cast<double>(prompt_tokens_));
  counter("lg_generation_tokens_total", "Tokens generated (each request's eos included).",
          static_cast<double>(generation_tokens_));
  w.family("lg_requests_finished_total", "Requests finished, by finish reason (abort: client gone or shutdown).",
           "counter");
  for (const char* reason : kFinishReasons) {
    const auto it = finished_.find(reason);
    w.sample("lg_requests_finished_total", it == finished_.end() ? 0.0 : static_cast<double>(it->second),
             {{"finished_reason", reason}});
  }
  w.family("lg_requests_rejected_total", "Requests answered 503 before they ran, by reason.", "counter");
  for (const char* reason : kRejectReasons) {
    const auto it = rejected_.find(reason);
    w.sample("lg_requests_rejected_total", it == rejected_.end() ? 0.0 : static_cast<double>(it->second),
             {{"reason", reason}});
  }
  w.histogram("lg_time_to_first_token_seconds", "Time from a request's arrival to its first token.", ttft_);
  w.histogram("lg_inter_token_latency_seconds", "Time between two tokens of one request.", itl_);
  w.histogram("lg_e2e_request_latency_seconds", "Time from a request's arrival to its end.", e2e_);
  return w.text();
}

}  // namespace lg::server
