#include "server/connection_watch.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

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

bool carries(int fd, const httplib::Request& req) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
  // The listening socket has no peer: getpeername fails and it is skipped.
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  std::string local_host, peer_host;
  int local_port = -1, peer_port = -1;
  if (!numeric_endpoint(local, local_len, local_host, local_port)) return false;
  if (!numeric_endpoint(peer, peer_len, peer_host, peer_port)) return false;
  return local_port == req.local_port && peer_port == req.remote_port && local_host == req.local_addr &&
         peer_host == req.remote_addr;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    if (carries(fd, req)) {
      fd_ = fd;
      return;
    }
  }
}

void shut_connection_reads(int port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    // The listening socket has no peer; a client's socket to the server has another local port.
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    std::string host;
    int local_port = -1;
    if (numeric_endpoint(local, local_len, host, local_port) && local_port == port) ::shutdown(fd, SHUT_RD);
  }
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
