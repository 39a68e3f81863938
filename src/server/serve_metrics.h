// What `GET /metrics` reports about the engine, after the metrics vLLM exposes (its names with
// `vllm:` become `lg_`): requests running and waiting, KV blocks used and free, preemptions,
// prompt and generated tokens, finished requests by reason, rejected requests, and histograms of
// time to first token, inter-token latency and end-to-end latency. The engine's worker records
// into it as tokens come; the HTTP thread that answers /metrics renders it. docs/server.md lists
// every metric.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "server/prometheus.h"

namespace lg::server {

/// The scheduler's state, as the engine's worker last published it.
struct EngineStats {
  int64_t running = 0;          ///< requests in the running batch
  int64_t waiting = 0;          ///< submitted, not running yet (queued, or preempted to recompute)
  int64_t kv_blocks_used = 0;   ///< KV-cache blocks held by requests
  int64_t kv_blocks_free = 0;
  int64_t kv_block_size = 0;    ///< positions per block
  int64_t preemptions = 0;      ///< requests preempted so far (their tokens recomputed later)
  int64_t steps = 0;            ///< batched steps run so far
  bool prefix_cache = false;    ///< whether prefix caching is on
  int64_t kv_blocks_cached_free = 0;   ///< of the free blocks, those holding a cached prefix
  int64_t prefix_cache_queries = 0;    ///< prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hits = 0;       ///< of those, tokens found cached (not computed)
  int64_t prefix_cache_evictions = 0;  ///< cached blocks evicted to hold other tokens
  int64_t prompt_tokens_computed = 0;  ///< prompt positions the lane computed (recomputation included)
};

/// One finished request, for the counters, histograms and the request log.
struct FinishedRequest {
  std::string id;                 ///< the response id ("cmpl-...") or empty
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  ///< the eos token included
  std::string finish_reason;      ///< "stop", "length", "abort" (client gone, shutdown) or "error"
  double ttft_s = -1;             ///< from submission to the first token; < 0: no token
  double total_s = 0;             ///< from submission to the end
};

/// The request log line on stderr: `lg: request ID prompt_tokens=.. completion_tokens=..
/// finish_reason=.. ttft_s=.. total_s=..` (key=value pairs, easy to grep and parse).
std::string request_log_line(const FinishedRequest& r);

/// Counters and histograms of the requests an engine ran. Thread-safe.
class ServeMetrics {
 public:
  ServeMetrics();

  /// A request's first token: its prompt was prefilled; `ttft_s` from submission.
  void first_token(int64_t prompt_tokens, double ttft_s);
  /// A token after the first, `itl_s` after the one before.
  void next_token(double itl_s);
  /// A request ended (any reason); counts it and its end-to-end time. Its prompt tokens were
  /// counted at its first token, if it had one (vLLM counts them there too): a request cancelled
  /// while queued prefilled nothing.
  void finished(const FinishedRequest& r);
  /// A request refused before it ran (`reason`: "queue_full", "shutting_down").
  void rejected(const std::string& reason);

  /// The exposition text: the gauges of `stats`, then every counter and histogram.
  std::string render(const EngineStats& stats) const;

 private:
  mutable std::mutex mu_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  std::map<std::string, int64_t> finished_, rejected_;
  prometheus::Histogram ttft_, itl_, e2e_;
};

}  // namespace lg::server
