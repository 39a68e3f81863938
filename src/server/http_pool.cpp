#include "server/http_pool.h"

#include <cstdio>
#include <system_error>
#include <thread>
#include <utility>

namespace lg::server {

ElasticThreadPool::ElasticThreadPool(size_t max_threads, size_t keep_threads, std::chrono::milliseconds idle_exit,
                                     std::function<void(size_t)> on_waiting)
    : max_threads_(max_threads < 1 ? 1 : max_threads),
      keep_threads_(keep_threads),
      idle_exit_(idle_exit),
      on_waiting_(std::move(on_waiting)) {}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

size_t ElasticThreadPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

void ElasticThreadPool::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (shutdown_) return;  // httplib stops accepting before it shuts the queue down
  jobs_.push_back(std::move(fn));
  if (jobs_.size() <= idle_) {
    lock.unlock();
    work_cv_.notify_one();
    return;
  }
  if (threads_ >= max_threads_) {  // queued: the next thread that is free takes it
    report_waiting();
    return;
  }
  ++threads_;
  try {
    // Detached: a thread that ends while idle is not joined; shutdown() waits for the count.
    std::thread([this] { work(); }).detach();
  } catch (const std::system_error& e) {
    --threads_;  // out of threads (EAGAIN): the job waits for one of the running threads
    std::fprintf(stderr, "lg: cannot start an HTTP thread (%s); %zu threads serve\n", e.what(), threads_);
    report_waiting();  // a cap of the system's: as full as the pool's own
  }
}

void ElasticThreadPool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    const bool woke = work_cv_.wait_for(lock, idle_exit_, [&] { return shutdown_ || !jobs_.empty(); });
    --idle_;
    if (!woke && threads_ > keep_threads_) break;  // idle too long and more threads than kept
    if (jobs_.empty()) {
      if (shutdown_) break;
      continue;
    }
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    report_waiting();
    lock.unlock();
    fn();
    fn = nullptr;  // what the job holds goes before the thread counts as free
    lock.lock();
  }
  --threads_;
  // Notified under the lock: once shutdown() sees the count drop, this thread touches the pool
  // no more.
  done_cv_.notify_all();
}

void ElasticThreadPool::report_waiting() {
  const size_t waiting = jobs_.size() > idle_ ? jobs_.size() - idle_ : 0;
  if (!on_waiting_ || waiting == waiting_reported_) return;
  waiting_reported_ = waiting;
  on_waiting_(waiting);
}

void ElasticThreadPool::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_ = true;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return threads_ == 0; });
}

}  // namespace lg::server
