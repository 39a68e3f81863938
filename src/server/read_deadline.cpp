#include "server/read_deadline.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "server/connection_watch.h"

namespace lg::server {

namespace {

// How often the watch looks at the port's sockets when no shed is asked for: a deadline is met
// within this much.
constexpr std::chrono::milliseconds kPeriod{250};
// The least time between two passes when waiting connections poke the watch.
constexpr std::chrono::milliseconds kMinGap{25};

// Shuts each (fd, inode) down if the fd is still the socket the pass listed (shutdown_if_same).
void shut_all(const std::vector<std::pair<int, ino_t>>& shut) {
  for (const auto& [fd, inode] : shut) shutdown_if_same(fd, inode, SHUT_RDWR);
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

void RequestReadWatch::answering(const httplib::Request& req) { report(req, true); }

void RequestReadWatch::answered(const httplib::Request& req) { report(req, false); }

void RequestReadWatch::report(const httplib::Request& req, bool answering) {
  const std::string key = connection_key(req);
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Connection& c = connections_[key];  // a connection no pass has listed yet starts here
  if (!answering || c.since == Clock::time_point{}) c.since = now;  // an answer out: the next request's time
  c.answering = answering;
  c.reported = now;
}

void RequestReadWatch::connections_waiting(size_t n) {
  // Called under the pool's lock: no lock here (a pass holds mu_ for a while); a wake-up lost
  // between the watch's check of poked_ and its wait is made up by the next period.
  waiting_.store(n);
  if (n == 0) return;
  poked_.store(true);
  wake_.notify_all();
}

void RequestReadWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last = Clock::now();
  while (!stop_) {
    wake_.wait_for(lock, kPeriod, [this] { return stop_ || poked_.load(); });
    // At the pool's cap every change of the waiting count pokes: passes at most every kMinGap.
    if (!stop_ && Clock::now() - last < kMinGap)
      wake_.wait_for(lock, kMinGap - (Clock::now() - last), [this] { return stop_; });
    if (stop_) break;
    poked_.store(false);
    lock.unlock();
    check();  // scans /proc/self/fd: not under the lock the connection threads take
    last = Clock::now();
    lock.lock();
  }
}

void RequestReadWatch::check() {
  struct Seen {
    int fd;
    ino_t inode;
    std::string key;
  };
  const auto listed = Clock::now();  // a report from now on may be of a socket the listing missed
  std::vector<Seen> seen;
  for_each_connection_on(port_, [&](int fd, ino_t inode, const std::string& key) { seen.push_back({fd, inode, key}); });
  const auto now = Clock::now();
  std::vector<std::pair<int, ino_t>> shut;
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> alive;
  size_t closing = 0;  // shut down by the watch, not closed yet: each frees its thread soon
  // Connections that may be shed, with the time since when they have not moved: reading a
  // request (since accepted or last answered) or answering a client that stopped reading.
  std::vector<std::pair<Clock::time_point, const Seen*>> reading, stalled;
  for (const Seen& s : seen) {
    alive.insert(s.key);
    Connection& c = connections_[s.key];
    if (c.inode != s.inode) {
      // Listed for the first time. Its time starts now unless the server has reported it since
      // the last pass (a report before the listing reached it, or of a new connection on a
      // closed one's 4-tuple: an answering mark is kept, never guessed away).
      const bool reported = c.reported >= last_listed_;
      if (!reported) c = Connection{};
      if (c.since == Clock::time_point{}) c.since = now;
      c.inode = s.inode;
      c.shut = false;  // a closed one's mark is not this connection's
      c.unsent = 0;
    }
    // Bytes written and not yet acknowledged by the client: a count that stays above zero and
    // unchanged is an answer the client has stopped reading (its receive window is full).
    int unsent = 0;
    if (::ioctl(s.fd, SIOCOUTQ, &unsent) != 0) unsent = 0;
    if (unsent == 0 || unsent != c.unsent) c.unsent_since = now;
    c.unsent = unsent;
    if (c.shut) {
      ++closing;
      continue;
    }
    if (!c.answering) {
      reading.emplace_back(c.since, &s);
    } else if (c.unsent > 0 && now - c.unsent_since > deadline_) {
      shut.emplace_back(s.fd, s.inode);  // as httplib's write timeout would, and no later
      c.shut = true;
    } else if (c.unsent > 0) {
      stalled.emplace_back(c.unsent_since, &s);
    }
  }
  // Closed since the last pass; an entry reported after the listing began may be a socket it
  // missed, and stays.
  for (auto it = connections_.begin(); it != connections_.end();)
    it = alive.count(it->first) || it->second.reported >= listed ? std::next(it) : connections_.erase(it);
  last_listed_ = listed;
  // Those that wait for a thread are the newest connections not answering (the pool takes them
  // first in, first out, and a socket's inode grows with its creation): nothing reads them, so
  // their time starts once a thread has them, and shedding one would free no thread.
  const size_t waiting = waiting_.load();
  std::sort(reading.begin(), reading.end(), [](const auto& a, const auto& b) { return a.second->inode < b.second->inode; });
  const size_t queued = std::min(waiting, reading.size());
  for (size_t k = reading.size() - queued; k < reading.size(); ++k) connections_[reading[k].second->key].since = now;
  reading.resize(reading.size() - queued);
  std::vector<std::pair<Clock::time_point, const Seen*>> sheddable = std::move(stalled);
  for (const auto& r : reading) {
    if (now - r.first > deadline_) {
      shut.emplace_back(r.second->fd, r.second->inode);
      connections_[r.second->key].shut = true;
    } else {
      sheddable.push_back(r);
    }
  }
  // While connections wait for a thread, those stalled longest are shed, oldest first.
  size_t to_shed = waiting > closing + shut.size() ? waiting - closing - shut.size() : 0;
  std::stable_sort(sheddable.begin(), sheddable.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto it = sheddable.begin(); to_shed > 0 && it != sheddable.end() && now - it->first >= kShedMinAge; ++it, --to_shed) {
    shut.emplace_back(it->second->fd, it->second->inode);
    connections_[it->second->key].shut = true;
  }
  shut_all(shut);
}

}  // namespace lg::server
