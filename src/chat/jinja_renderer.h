// Jinja2 rendering through Python: a small pool of `python3` child processes that run Jinja2
// itself (jinja_render.py, embedded in the binary) and answer render requests as JSON lines over
// a socket pair. No C++ Jinja implementation is packaged in Debian 12, and Jinja2 is the engine
// transformers renders chat templates with, so its output is transformers' by construction.
// libpython is not linked: the same binary runs wherever a python3 with jinja2 >= 3.1 is found.
//
// Failure is per request: a template error, a render over its time or size bound, a crashed or
// missing interpreter each throw ChatTemplateError for that call; a worker that timed out or died is
// killed and replaced on the next call.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/chat_error.h"

namespace lg::chat {

struct RendererOptions {
  /// The interpreter to start; empty: $LG_PYTHON when set, else `python3` on PATH.
  std::string python;
  /// Bound on one render (the worker is killed past it). transformers renders in milliseconds.
  std::chrono::milliseconds timeout{5000};
  /// Bound on the rendered text, in UTF-8 bytes (a prompt this size is far beyond any context).
  size_t max_output_bytes = 16u << 20;
  /// Address-space limit of each worker (RLIMIT_AS), so a template that builds a huge string
  /// fails with MemoryError instead of exhausting the machine; 0: none.
  size_t max_worker_bytes = size_t{2} << 30;
  /// Workers started at most (on demand); more concurrent renders wait for a free one.
  size_t max_workers = 2;
};

/// A pool of Jinja2 worker processes. Thread-safe; workers start on first use.
class JinjaRenderer {
 public:
  explicit JinjaRenderer(RendererOptions options = {});
  ~JinjaRenderer();  ///< kills the workers
  JinjaRenderer(const JinjaRenderer&) = delete;
  JinjaRenderer& operator=(const JinjaRenderer&) = delete;

  /// Renders template `source` with `variables` (a JSON object: each key a template variable,
  /// given to Template.render as is). Throws ChatTemplateError (syntax, failed, too_large,
  /// timeout, unavailable).
  std::string render(const std::string& source, const nlohmann::ordered_json& variables);

  /// Compiles `source` without rendering. Throws ChatTemplateError (syntax, unavailable, timeout).
  void check_syntax(const std::string& source);

  /// Starts a worker if none is running and returns what it runs, e.g. "Jinja2 3.1.2 on Python
  /// 3.11.2 (python3)". Throws ChatTemplateError(unavailable) with the reason when none can start.
  std::string engine_version();

  const RendererOptions& options() const { return options_; }

  struct Worker;  // one child process (jinja_renderer.cpp)

 private:
  std::unique_ptr<Worker> acquire();
  void release(std::unique_ptr<Worker> worker);
  void discard(std::unique_ptr<Worker> worker);
  nlohmann::ordered_json call(const nlohmann::ordered_json& request);

  RendererOptions options_;
  std::string python_;  // resolved interpreter
  std::mutex mutex_;
  std::condition_variable free_;
  std::vector<std::unique_ptr<Worker>> idle_;
  size_t running_ = 0;  // workers started and not yet destroyed (idle or in use)
  std::string version_;
};

/// The worker script (jinja_render.py) as embedded at build time.
extern const char* const kJinjaRenderScript;

}  // namespace lg::chat
