// Tells a non-streaming handler whether its client is still connected. cpp-httplib 0.11.4 gives
// a handler no access to its socket (Request::is_connection_closed came in later versions), and a
// non-streaming handler writes nothing until generation ends, so a hung-up client would otherwise
// keep the lane (batch 1) busy for the whole max_tokens and stall every request behind it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

namespace httplib {
struct Request;
}

namespace lg::server {

class ConnectionWatch {
 public:
  /// Finds the socket that carries `req`: the open TCP socket of this process whose local and
  /// peer address/port are the request's (a 4-tuple is unique among open sockets). Must be
  /// called on the handler's thread, while httplib holds the connection open.
  explicit ConnectionWatch(const httplib::Request& req);

  /// True once the peer closed or reset the connection (EOF, POLLRDHUP, POLLHUP, POLLERR). One
  /// poll(2) with a zero timeout, cheap enough per decode step. A client that half-closes its
  /// write side after sending the request reads as gone: no HTTP client this server targets
  /// does that. False when the socket was not found (then nothing is cancelled, as before).
  bool gone() const;

  /// Whether the request's socket was found.
  bool found() const { return fd_ >= 0; }

  /// Ends the connection after an answer that said "Connection: close" (if the socket was found):
  /// shuts its write side (the client reads the answer, then end-of-file), reads and drops what
  /// the client still sends until it closes or for at most `linger` (closing with bytes unread
  /// would reset the connection, and the client could lose the answer before reading it: nginx's
  /// lingering close), then shuts the read side, so httplib's next read sees end-of-file and its
  /// keep-alive loop ends, whatever the client sent after.
  void close_after_answer(std::chrono::milliseconds linger) const;

 private:
  int fd_ = -1;
};

/// The 4-tuple of the connection that carries `req` ("LOCAL_HOST:PORT PEER_HOST:PORT", numeric), as
/// for_each_connection_on names a socket's.
std::string connection_key(const httplib::Request& req);

/// Calls visit(fd, inode, key) for each connected TCP socket of this process whose local port is
/// `port` (the connections a server on that port accepted; a client's own socket to it has another
/// local port); key as connection_key.
void for_each_connection_on(int port, const std::function<void(int fd, ino_t inode, const std::string& key)>& visit);

/// shutdown(2) `how` of the socket `fd` names, if it is still the one of `inode` (what
/// for_each_connection_on listed: the number may have been closed and given to another socket
/// since). The check and the shutdown go through a duplicate of the fd, which holds the socket it
/// named then, so no close and reuse in between can turn them onto another connection. Returns
/// whether it shut it.
bool shutdown_if_same(int fd, ino_t inode, int how);

/// Shuts the read side of every connected TCP socket of this process whose local port is `port`
/// (the connections a server on that port accepted): a thread blocked reading a request from one
/// returns at once with end-of-file. httplib then also stops writing on it (its is_writable
/// peeks for end-of-file): call it once the answers are written.
void shut_connection_reads(int port);

}  // namespace lg::server
