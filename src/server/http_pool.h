// The threads that run lg serve's HTTP connections. cpp-httplib hands every accepted connection
// to a task queue and runs it on one thread until the connection closes: the whole generation
// for a completion, and the keep-alive wait for the next request. Its own ThreadPool has a fixed
// number of threads, so when all of them wait on generation (or on idle keep-alive clients) a
// `GET /health` queues behind them. This pool starts a thread whenever no idle one is there, up
// to a cap, and lets threads beyond a few go after a while idle: a quick request never waits for
// a thread while generation holds the others.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace lg::server {

class ElasticThreadPool : public httplib::TaskQueue {
 public:
  /// At most `max_threads` threads (>= 1); `keep_threads` of them stay when idle, the others end
  /// after `idle_exit` without work. `on_waiting` (if set) is told, under the pool's lock (it
  /// must be quick and take no lock the pool's callers hold), how many jobs wait for a thread
  /// each time that number changes: lg serve sheds that many stalled connections.
  ElasticThreadPool(size_t max_threads, size_t keep_threads, std::chrono::milliseconds idle_exit,
                    std::function<void(size_t)> on_waiting = {});
  ~ElasticThreadPool() override;

  /// Runs `fn` on an idle thread, else on a new one, else (at the cap, or when no thread can be
  /// started) as soon as a thread is free.
  void enqueue(std::function<void()> fn) override;
  /// Runs what is queued, then waits until every thread has ended. New work is refused after.
  void shutdown() override;

  /// Threads alive now (busy or idle).
  size_t threads() const;

 private:
  void work();
  /// Tells on_waiting_ the jobs no idle thread is about to take, if that changed (under mu_).
  void report_waiting();

  const size_t max_threads_, keep_threads_;
  const std::chrono::milliseconds idle_exit_;
  const std::function<void(size_t)> on_waiting_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  ///< jobs queued, or shutdown
  std::condition_variable done_cv_;  ///< a thread ended
  std::deque<std::function<void()>> jobs_;
  size_t threads_ = 0, idle_ = 0, waiting_reported_ = 0;
  bool shutdown_ = false;
};

}  // namespace lg::server
