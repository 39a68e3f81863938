// HTTP/1.1 over plain sockets for the serving tests: clients that an HTTP library does not play
// (one that hangs up mid-stream, one that connects and says nothing, one that keeps an idle
// keep-alive connection open), and reading a value out of a Prometheus text.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>

namespace lg::test {

/// A TCP connection to 127.0.0.1:port, or -1.
inline int tcp_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

/// The text of a JSON POST request.
inline std::string post_text(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// Opens a connection and sends a JSON POST on it; returns the socket (-1 on failure).
inline int send_post(int port, const std::string& path, const std::string& body) {
  const int fd = tcp_connect(port);
  if (fd >= 0 && !send_all(fd, post_text(path, body))) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Reads until `needle` appears in what was read, EOF, or `timeout`; returns what was read.
inline std::string read_until(int fd, const std::string& needle, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (got.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

/// The first response in `text` (what read_until returned): its status (0 when there is none yet)
/// and its body, `Content-Length` bytes long.
struct RawResponse {
  int status = 0;
  std::string body;
};
inline RawResponse first_response(const std::string& text) {
  RawResponse r;
  const size_t head_end = text.find("\r\n\r\n");
  if (text.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::stoi(text.substr(9, 3));
  const std::string head = text.substr(0, head_end);
  const size_t cl = head.find("Content-Length: ");
  const size_t n = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
  r.body = text.substr(head_end + 4, n);
  return r;
}

/// The value of header `name` (any case) in the head of the first response in `text`, if present.
inline std::optional<std::string> response_header(const std::string& text, const std::string& name) {
  const auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const std::string head = text.substr(0, text.find("\r\n\r\n"));
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    const size_t end = std::min(head.find("\r\n", at + 2), head.size());
    const std::string line = head.substr(at + 2, end - at - 2);
    const size_t colon = line.find(':');
    if (colon == std::string::npos || lower(line.substr(0, colon)) != lower(name)) continue;
    const size_t value = line.find_first_not_of(' ', colon + 1);
    return value == std::string::npos ? std::string() : line.substr(value);
  }
  return std::nullopt;
}

/// Sends `bytes` on a new connection and returns what comes back up to the end of the first
/// response's body (or `timeout`). The sending side stays open: httplib writes nothing to a client
/// that has shut down its side.
inline std::string exchange(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  const int fd = tcp_connect(port);
  if (fd < 0) return {};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  std::string got;
  if (send_all(fd, bytes)) {
    got = read_until(fd, "\r\n\r\n", left());
    const size_t head_end = got.find("\r\n\r\n");
    const size_t cl = got.find("Content-Length: ");
    if (head_end != std::string::npos && cl != std::string::npos && cl < head_end) {
      const size_t want = head_end + 4 + std::stoul(got.substr(cl + 16));
      while (got.size() < want && left().count() > 0) {
        const std::string more = read_until(fd, std::string(1, '\0') + "never", std::min(left(), std::chrono::milliseconds(50)));
        got += more;
      }
    }
  }
  ::close(fd);
  return got;
}

/// The value of the sample written exactly as `sample` (name and labels) in a Prometheus text.
inline std::optional<double> metric_value(const std::string& text, const std::string& sample) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 && line[sample.size()] == ' ')
      return std::stod(line.substr(sample.size() + 1));
  }
  return std::nullopt;
}

}  // namespace lg::test
