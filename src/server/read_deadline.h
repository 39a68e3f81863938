// A deadline for reading each request, and a thread for a new connection when every HTTP thread
// is taken. cpp-httplib 0.11 gives a connection one thread for its whole life and times a read out
// only per recv (30 s a byte), so a client that sends a request a byte at a time holds a thread for
// as long as it keeps sending; with as many such connections as the pool has threads (a new-user
// pass: 265 of them with --max-batch 2 --max-waiting 2, 1,030 at the defaults) /health and every
// request waited for as long as they trickled. httplib hides a connection's socket from the
// server, so this watch finds the server's connections as the process's sockets on its port
// (/proc/self/fd, as ConnectionWatch does) and tells a connection that is answering a request
// from one that is reading (or idling between keep-alive requests) by the request's 4-tuple,
// which the server reports when a request has been read and when its answer has gone out:
//   - a connection that has not delivered a whole request within `deadline` of getting a thread
//     or of its last answer is shut down (nginx's client_header_timeout and client_body_timeout,
//     taken together);
//   - an answer whose client has stopped reading (its socket's send queue holds bytes that have
//     not moved) is shut down after `deadline` stalled (nginx's send_timeout; httplib's write
//     timeout is per write call, so a large answer could hold its thread a multiple of it);
//   - while connections wait for a thread (the pool is at its cap), as many of the connections
//     stalled longest (at least kShedMinAge each: reading a request, or answering a client that
//     stopped reading) are shut down, so the waiting ones are served; a busy server sheds its
//     stalled or idle connections, never an answer that is still being read.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
struct Request;
}

namespace lg::server {

class RequestReadWatch {
 public:
  /// A connection reading for less than this (or an answer stalled for less) is never shed for
  /// a new one: it is most likely a request being read at the network's speed.
  static constexpr std::chrono::milliseconds kShedMinAge{500};

  /// Watches the connections accepted on local `port` (one server's), shutting down those that
  /// take longer than `deadline` to send a request, or whose client stops reading an answer for
  /// that long. Starts its thread.
  RequestReadWatch(int port, std::chrono::milliseconds deadline);
  ~RequestReadWatch();  ///< stops its thread; shuts nothing down
  RequestReadWatch(const RequestReadWatch&) = delete;
  RequestReadWatch& operator=(const RequestReadWatch&) = delete;

  /// `req` has been read whole (its body too): its connection is answering, and no deadline runs
  /// until answered(req).
  void answering(const httplib::Request& req);
  /// `req`'s answer has gone out: its connection's deadline for the next request starts now.
  void answered(const httplib::Request& req);
  /// How many accepted connections wait for a thread (the pool is at its cap). While some do, the
  /// watch's thread shuts down as many of the connections stalled longest (at least kShedMinAge
  /// each), beyond those it already shut that have not closed yet; this returns at once.
  void connections_waiting(size_t n);

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    ino_t inode = 0;  ///< the socket's, once a pass listed it: a new connection on the 4-tuple has another
    Clock::time_point since;     ///< accepted (first listed), or its last answer went out
    Clock::time_point reported;  ///< the server's last report of it (answering / answered)
    bool answering = false;
    bool shut = false;  ///< shut down by the watch: left alone until its thread closes it
    int unsent = 0;                  ///< its send queue's bytes at the last pass (SIOCOUTQ)
    Clock::time_point unsent_since;  ///< since when that count has not changed (or was zero)
  };
  void report(const httplib::Request& req, bool answering);
  void run();
  void check();  ///< one pass over the port's sockets: learn new ones, shut down what is due

  const int port_;
  const std::chrono::milliseconds deadline_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Connection> connections_;  ///< by 4-tuple (Request::local_addr ...)
  std::atomic<size_t> waiting_{0};
  std::atomic<bool> poked_{false};  ///< connections wait: look now
  Clock::time_point last_listed_;   ///< when the last pass began listing the sockets
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace lg::server
