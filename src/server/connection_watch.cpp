#include "server/connection_watch.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

namespace lg::server {

namespace {

// The numeric host and the port of a socket address, formatted as httplib formats
// Request::remote_addr/local_addr (getnameinfo with NI_NUMERICHOST), so the strings compare.
bool numeric_endpoint(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char buf[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, buf, sizeof(buf), nullptr, 0, NI_NUMERICHOST) != 0)
    return false;
  host = buf;
  if (addr.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  else return false;
  return true;
}

// The ends of a socket: its numeric host and port and its peer's (the listening socket, which
// has no peer, and anything not a socket give none).
struct Ends {
  std::string local_host, peer_host;
  int local_port = -1, peer_port = -1;
};
bool connected_ends(int fd, Ends& e, ino_t& inode) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  inode = st.st_ino;
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  return numeric_endpoint(local, local_len, e.local_host, e.local_port) &&
         numeric_endpoint(peer, peer_len, e.peer_host, e.peer_port);
}

// Calls visit(fd, ends, inode) for each connected socket of this process (its /proc/self/fd),
// until visit returns true.
template <class Visit>
void for_each_connection(Visit&& visit) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    Ends e;
    ino_t inode = 0;
    if (connected_ends(fd, e, inode) && visit(fd, e, inode)) return;
  }
}

std::string key_of(const std::string& local_host, int local_port, const std::string& peer_host, int peer_port) {
  return local_host + ":" + std::to_string(local_port) + " " + peer_host + ":" + std::to_string(peer_port);
}

}  // namespace

std::string connection_key(const httplib::Request& req) {
  return key_of(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
}

ConnectionWatch::ConnectionWatch(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  const std::string want = connection_key(req);
  for_each_connection([&](int fd, const Ends& e, ino_t) {
    if (key_of(e.local_host, e.local_port, e.peer_host, e.peer_port) != want) return false;
    fd_ = fd;
    return true;
  });
}

void for_each_connection_on(int port, const std::function<void(int fd, ino_t inode, const std::string& key)>& visit) {
  for_each_connection([&](int fd, const Ends& e, ino_t inode) {
    if (e.local_port == port) visit(fd, inode, key_of(e.local_host, e.local_port, e.peer_host, e.peer_port));
    return false;
  });
}

bool shutdown_if_same(int fd, ino_t inode, int how) {
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return false;  // closed since
  struct stat st {};
  const bool same = ::fstat(own, &st) == 0 && st.st_ino == inode;
  if (same) ::shutdown(own, how);
  ::close(own);
  return same;
}

void shut_connection_reads(int port) {
  for_each_connection_on(port, [](int fd, ino_t inode, const std::string&) { shutdown_if_same(fd, inode, SHUT_RD); });
}

void ConnectionWatch::close_after_answer(std::chrono::milliseconds linger) const {
  if (fd_ < 0) return;
  ::shutdown(fd_, SHUT_WR);
  const auto end = std::chrono::steady_clock::now() + linger;
  char drop[4096];
  for (auto now = std::chrono::steady_clock::now(); now < end; now = std::chrono::steady_clock::now()) {
    pollfd p{fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - now).count();
    if (::poll(&p, 1, static_cast<int>(left) + 1) <= 0) break;
    if (::recv(fd_, drop, sizeof(drop), MSG_DONTWAIT) <= 0) break;  // closed by the client, or an error
  }
  ::shutdown(fd_, SHUT_RD);
}

bool ConnectionWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    // Readable but not hung up: a pipelined next request, or EOF on kernels without POLLRDHUP.
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  return false;
}

}  // namespace lg::server
