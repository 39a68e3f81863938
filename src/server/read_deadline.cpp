#include "server/read_deadline.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <set>
#include <utility>
#include <vector>

#include "server/connection_watch.h"

namespace lg::server {

namespace {

// How often the watch looks at the port's sockets when no shed is asked for: a deadline is met
// within this much.
constexpr std::chrono::milliseconds kPeriod{250};

// Shuts `fd` down only if it is still the socket the pass saw (its number may have been closed
// and given to a new connection since: a socket's inode is its own).
void shut_if_same(int fd, ino_t inode) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_ino == inode) ::shutdown(fd, SHUT_RDWR);
}

}  // namespace

RequestReadWatch::RequestReadWatch(int port, std::chrono::milliseconds deadline)
    : port_(port), deadline_(deadline), thread_([this] { run(); }) {}

RequestReadWatch::~RequestReadWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RequestReadWatch::answering(const httplib::Request& req) {
  const std::string key = connection_key(req);
  std::lock_guard<std::mutex> lock(mu_);
  Connection& c = connections_[key];  // a connection the watch has not seen yet starts here
  if (c.since == std::chrono::steady_clock::time_point{}) c.since = std::chrono::steady_clock::now();
  c.answering = true;
}

void RequestReadWatch::answered(const httplib::Request& req) {
  const std::string key = connection_key(req);
  std::lock_guard<std::mutex> lock(mu_);
  Connection& c = connections_[key];
  c.answering = false;
  c.since = std::chrono::steady_clock::now();
}

void RequestReadWatch::connections_waiting(size_t n) {
  waiting_.store(n);
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    poked_ = true;
  }
  wake_.notify_all();
}

size_t RequestReadWatch::timed_out() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timed_out_;
}

size_t RequestReadWatch::shed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shed_;
}

void RequestReadWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, kPeriod, [this] { return stop_ || poked_; });
    if (stop_) break;
    poked_ = false;
    lock.unlock();
    check();  // scans /proc/self/fd: not under the lock the connection threads take
    lock.lock();
  }
}

void RequestReadWatch::check() {
  struct Seen {
    int fd;
    ino_t inode;
    std::string key;
  };
  std::vector<Seen> seen;
  for_each_connection_on(port_, [&](int fd, ino_t inode, const std::string& key) { seen.push_back({fd, inode, key}); });
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<int, ino_t>> shut;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> alive;
    size_t closing = 0;  // shut down by the watch, not closed yet: each frees a thread soon
    // The connections reading now, oldest first, for a shed.
    std::multimap<std::chrono::steady_clock::time_point, const Seen*> reading;
    for (const Seen& s : seen) {
      alive.insert(s.key);
      Connection& c = connections_[s.key];
      if (c.inode != s.inode) {
        // First seen, or a new connection on a closed one's 4-tuple: its time starts now, unless
        // the server already reported it (answering() before this pass saw it).
        const bool reported = c.inode == 0 && c.since != std::chrono::steady_clock::time_point{};
        if (!reported) c = Connection{s.inode, now, false};
        c.inode = s.inode;
      }
      if (c.shut) ++closing;
      if (c.answering || c.shut) continue;
      if (now - c.since > deadline_) {
        shut.emplace_back(s.fd, s.inode);
        ++timed_out_;
        c.shut = true;
      } else {
        reading.emplace(c.since, &s);
      }
    }
    for (auto it = connections_.begin(); it != connections_.end();)  // closed since the last pass
      it = alive.count(it->first) ? std::next(it) : connections_.erase(it);
    const size_t waiting = waiting_.load();
    size_t to_shed = waiting > closing + shut.size() ? waiting - closing - shut.size() : 0;
    for (auto it = reading.begin(); to_shed > 0 && it != reading.end() && now - it->first >= kShedMinAge; ++it) {
      shut.emplace_back(it->second->fd, it->second->inode);
      connections_[it->second->key].shut = true;
      --to_shed;
      ++shed_;
    }
  }
  for (const auto& [fd, inode] : shut) shut_if_same(fd, inode);
}

}  // namespace lg::server
