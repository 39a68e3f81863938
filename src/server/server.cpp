#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "server/connection_watch.h"
#include "server/http_json.h"
#include "server/http_pool.h"
#include "server/openai.h"
#include "support/error.h"

namespace lg::server {

namespace {

using nlohmann::json;

// Threads beyond those generation can hold (every running and waiting request holds its
// connection's thread): what /health, /metrics, 400s and idle keep-alive connections run on.
constexpr size_t kSpareThreads = 256;
// Threads counted for waiting requests at most (an engine may be unbounded: lg batch's).
constexpr int64_t kMaxWaitingThreads = 4096;
// Threads kept when idle; the rest end after a while without work.
constexpr size_t kKeptThreads = 16;
constexpr std::chrono::seconds kThreadIdleExit{30};

// Tells the client to close the connection after this answer: where the request's framing is
// lost (its body's end unknown, its bytes not HTTP), the next bytes on the connection are no
// request. Set on the request (httplib's own non-const object, handed to the hooks as const):
// httplib then writes one "Connection: close" and no Keep-Alive, where a header set on the
// response came beside its own (twice "Connection: close", or with "Keep-Alive: timeout=2").
// httplib decides whether to keep the connection from the request's own Connection header as
// soon as it has read the head, so this changes only what the answer says: t_close_after_answer
// has the logger (which runs once the answer is written, on the connection's thread) shut the
// connection (ConnectionWatch::close_after_answer), and httplib's keep-alive loop then ends at once
// instead of reading the rest as the next request (RFC 9112 9.6: no request after a close is served).
thread_local bool t_close_after_answer = false;
// How long a closing connection reads and drops what its client still sends (nginx lingers up to
// 5 s a read, 30 s in all; a client closes once it has read the answer and its end).
constexpr std::chrono::milliseconds kCloseLinger{1000};
void close_connection(const httplib::Request& req, httplib::Response& res) {
  auto& r = const_cast<httplib::Request&>(req);
  r.headers.erase("Connection");
  r.set_header("Connection", "close");
  res.headers.erase("Connection");
  t_close_after_answer = true;
}

// A Content-Length value as a byte count: 1 to 19 decimal digits, nothing else.
std::optional<uint64_t> byte_count(const std::string& v) {
  if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(v);
}

// A request target in absolute form (`GET http://host:port/health HTTP/1.1`, as a client sends it
// through a forward proxy) is routed by its path: servers must accept that form (RFC 9112
// 3.2.2), where httplib took the whole URL for the path (404 "no route").
void route_absolute_form(const httplib::Request& req) {
  std::string& path = const_cast<httplib::Request&>(req).path;  // httplib's own object, as above
  for (const std::string scheme : {"http://", "https://"}) {
    if (path.size() < scheme.size() ||
        !std::equal(scheme.begin(), scheme.end(), path.begin(),
                    [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
      continue;
    const size_t slash = path.find('/', scheme.size());
    path = slash == std::string::npos ? "/" : path.substr(slash);
    return;
  }
}

// The method each route answers; another method on one of these paths is a 405, not a 404.
std::optional<std::string> allowed_method(const std::string& path) {
  static const std::vector<std::pair<std::string, std::string>> routes = {
      {"/health", "GET"},          {"/metrics", "GET"},   {"/v1/models", "GET"},     {"/version", "GET"},
      {"/v1/completions", "POST"}, {"/tokenize", "POST"}, {"/detokenize", "POST"}, {"/v1/chat/completions", "POST"}};
  for (const auto& [p, method] : routes)
    if (p == path) return method;
  if (path.rfind("/v1/models/", 0) == 0) return "GET";
  return std::nullopt;
}

// What a 400 that httplib answered itself (no route wrote a body) was about. httplib records the
// peer's address only once the request line and headers have parsed: without it the bytes were not
// an HTTP/1.x request at all (garbage, a TLS handshake on the plain port); with it, the body could
// not be read (a malformed chunked encoding on a path without a route of ours).
std::string unparsed_request_message(const httplib::Request& req) {
  if (req.remote_addr.empty())
    return fmt::format("the request is not valid HTTP/1.1: its request line or headers could not be parsed (expected "
                       "a line such as 'POST /v1/completions HTTP/1.1', then 'Name: value' headers, each ending in "
                       "CRLF; a header line longer than {} bytes is refused too)",
                       CPPHTTPLIB_HEADER_MAX_LENGTH);
  return fmt::format("the body of {} {} could not be read (its Content-Length or chunked encoding is malformed)",
                     req.method, req.path);
}

// What is wrong with the request's headers, if anything: a name with whitespace before its colon,
// a value holding NUL or CR, a Transfer-Encoding header more than once, or Content-Length headers
// with a value that is not a byte count (1 to 19 decimal digits), or two that differ. httplib
// reads Content-Length with strtoull, which takes "-5" for 2^64 - 5: past the body cap, it then
// reads for 2^64 - 5 bytes to discard them, and answers 413 only when its 30 s read timeout ends.
// Of several values it reads the first, where a proxy in front may frame the body by another
// (request smuggling; RFC 9112 6.3 requires a 400, as vLLM's h11 answers). Checked before
// routing, the client hears at once which header is wrong.
std::optional<std::string> bad_headers(const httplib::Request& req) {
  // Whitespace between a field's name and its colon (`Content-Length : 59`) must be a 400 (RFC
  // 9112 5.1): httplib took it for another field, and the body it frames for the next request.
  // NUL or CR in a value is a 400 too (RFC 9110 5.5, as h11): httplib kept them, and a proxy
  // may cut the value (or the head) where they stand.
  for (const auto& [name, value] : req.headers) {
    if (name.find_first_of(" \t") != std::string::npos)
      return fmt::format("the header '{}' of {} {} has whitespace before its colon", name, req.method, req.path);
    if (value.find_first_of(std::string_view("\0\r", 2)) != std::string::npos)
      return fmt::format("the header '{}' of {} {} holds a NUL or CR byte in its value", name, req.method, req.path);
  }
  // Chunked applied twice, or named in two fields that a proxy may join otherwise (RFC 9112 6.1:
  // a body is chunked once); httplib read the first and decoded the body once.
  if (const size_t codings = req.get_header_value_count("Transfer-Encoding"); codings > 1)
    return fmt::format("{} {} has {} Transfer-Encoding headers: send one ('Transfer-Encoding: chunked')", req.method,
                       req.path, codings);
  // Two framings of one body: RFC 9112 6.1 has the server close the connection after answering
  // (a proxy in front may have framed it the other way: request smuggling), as httplib did not.
  if (req.has_header("Transfer-Encoding") && req.has_header("Content-Length"))
    return fmt::format("{} {} has both Content-Length and Transfer-Encoding: send one", req.method, req.path);
  const auto [first, last] = req.headers.equal_range("Content-Length");
  for (auto it = first; it != last; ++it) {
    if (!byte_count(it->second))
      return fmt::format("the header 'Content-Length: {}' of {} {} is not a byte count (a non-negative decimal integer)",
                         it->second, req.method, req.path);
  }
  for (auto it = first; it != last; ++it)
    if (byte_count(it->second) != byte_count(first->second))
      return fmt::format("{} {} has two Content-Length headers that differ ({} and {})", req.method, req.path,
                         first->second, it->second);
  return std::nullopt;
}

// What is wrong with the Host header, if anything: an HTTP/1.1 request must carry exactly one
// (RFC 9112 3.2: a server answers 400 otherwise, as vLLM's h11 does); HTTP/1.0 may omit it.
std::optional<std::string> bad_host(const httplib::Request& req) {
  const size_t hosts = req.get_header_value_count("Host");
  if (hosts > 1) return fmt::format("{} {} has {} Host headers: send one", req.method, req.path, hosts);
  if (hosts == 0 && req.version == "HTTP/1.1")
    return fmt::format("{} {} is an HTTP/1.1 request without a Host header (RFC 9112 3.2)", req.method, req.path);
  return std::nullopt;
}

// One entry of /v1/models: the served model under the name `id`.
json model_json(const Engine& engine, const std::string& id) {
  return {{"id", id},
          {"object", "model"},
          {"created", now_unix()},
          {"owned_by", "lanegraph"},
          {"max_model_len", engine.context()}};
}

}  // namespace

Server::Server(Engine& engine, const ServerOptions& options)
    : engine_(engine),
      options_(options),
      cors_(options.cors),
      // Without a tokenizer (random weights, or no tokenizer.json) there is no template: chat is
      // refused per request.
      chat_template_(!engine.has_tokenizer()
                         ? chat::ChatTemplate{}
                         : chat::ChatTemplate::load(engine.model_dir(), options.chat_template_file,
                                                    std::make_shared<chat::JinjaRenderer>(options.chat_renderer))),
      http_(std::make_unique<httplib::Server>()) {
  install_routes();
}

Server::~Server() { stop(); }

void Server::install_routes() {
  auto& h = *http_;
  // httplib's default socket options set SO_REUSEPORT on Linux: a second lg serve on a port in use
  // then binds too and silently takes part of the connections. SO_REUSEADDR alone still allows a
  // quick restart on the port of a server that just exited, and a busy port is refused.
  h.set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;  // the listening socket: bind() widens its backlog
  });
  h.set_payload_max_length(options_.max_body_bytes);
  // A connection holds its thread while its request generates and while it idles between
  // keep-alive requests: the pool starts threads as needed, so a quick request never queues
  // behind them. Its cap leaves kSpareThreads beyond the most requests generation can hold
  // (running + waiting; more are refused with a 503 at once).
  const size_t max_threads = static_cast<size_t>(engine_.limits().max_batch) +
                             static_cast<size_t>(std::min<int64_t>(engine_.max_waiting(), kMaxWaitingThreads)) +
                             kSpareThreads;
  h.new_task_queue = [this, max_threads] {
    return new ElasticThreadPool(max_threads, kKeptThreads, std::chrono::duration_cast<std::chrono::milliseconds>(kThreadIdleExit),
                                 [this](size_t waiting) {
                                   if (read_watch_) read_watch_->connections_waiting(waiting);
                                 });
  };
  h.set_keep_alive_timeout(options_.keep_alive_s);
  // Clients that reuse connections (the OpenAI SDK's pool) are not made to reconnect every 5
  // requests, httplib's default.
  h.set_keep_alive_max_count(1000);
  h.set_read_timeout(30, 0);
  h.set_write_timeout(30, 0);
  install_info_routes();
  install_generation_routes();
  install_error_handlers();
  // After each answer has gone out (error pages and streams too): the connection's deadline for
  // its next request starts. httplib calls its logger there.
  h.set_logger([this](const httplib::Request& req, const httplib::Response&) {
    if (read_watch_ && req.remote_port >= 0) read_watch_->answered(req);
    // The answer said "Connection: close" (close_connection): close it. A request whose head did
    // not parse has no addresses to find its socket by; httplib holds it for the keep-alive wait.
    if (std::exchange(t_close_after_answer, false) && req.remote_port >= 0)
      ConnectionWatch(req).close_after_answer(kCloseLinger);
  });
  // A body past the cap is refused before the client sends it (RFC 9110 10.1.1), where httplib
  // answered "100 Continue" and then read and discarded it.
  h.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!answer_too_large(req, res)) return 100;
    return res.status;
  });
  // Runs on every answer just before its headers are written (httplib has set its own by now),
  // error pages and event streams included.
  h.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // A page's cross-origin request reads the answer only with these; a preflight has its own.
    if (req.has_header("Origin") && !res.has_header("Access-Control-Allow-Origin"))
      for (const auto& [name, value] : cors_.response_headers(req.get_header_value("Origin")))
        res.set_header(name, value);
    // While draining, every answer closes its connection: a client's next request opens a new
    // connection, which a load balancer sends elsewhere.
    if (!draining_ || res.get_header_value("Connection") == "close") return;
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");  // httplib's headers are set by now: close_connection is too late
  });
}

// The routes that never wait on generation: they read the engine's published state only.
void Server::install_info_routes() {
  auto& h = *http_;
  h.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    // 503 while draining: a load balancer takes the server out of rotation, where a refused
    // connection would read as a crash.
    if (draining_) send_json(res, 503, {{"status", "draining"}, {"message", "the server is shutting down"}});
    else send_json(res, 200, {{"status", "ok"}});
  });
  // Every served name is an entry of its own, as vLLM lists them (--served-model-name a b).
  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    for (const std::string& name : engine_.served_names()) data.push_back(model_json(engine_, name));
    send_json(res, 200, {{"object", "list"}, {"data", data}});
  });
  h.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!engine_.serves(id)) {
      send_json(res, 404, error_body(model_not_found(engine_, id), "NotFoundError", "model"));
      return;
    }
    // A served name answers as itself; the model directory as given (no served names), as the id.
    const std::vector<std::string> names = engine_.served_names();
    const bool listed = std::find(names.begin(), names.end(), id) != names.end();
    send_json(res, 200, model_json(engine_, listed ? id : engine_.model_id()));
  });
  // vLLM's /version: the server's own version (a client checks what it talks to).
  h.Get("/version", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"version", LG_VERSION}}); });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(engine_.metrics().render(engine_.stats()), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void Server::install_error_handlers() {
  auto& h = *http_;
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_close_after_answer = false;  // this request's own: a write that failed left no logger call
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 6.3;
    // `curl -X POST URL` sends one), but httplib 0.11 reads the body of a POST, PUT, PATCH or
    // DELETE until the connection closes, so the client heard nothing until the 30 s read timeout
    // and then a 400. Saying the length it has lets httplib route it at once (400, 404, 405,
    // 415). The Request is httplib's own non-const object, handed to this hook as const.
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
      const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
    route_absolute_form(req);
    // A request without a body is read whole now; one with a body, once its route has read it
    // (read_json_body's callers) or httplib has (a route without a body reader).
    if (!req.has_header("Transfer-Encoding") && req.get_header_value("Content-Length") == "0") request_read(req);
    if (req.has_header("Transfer-Encoding") && answer_transfer_encoding(req, res))
      return httplib::Server::HandlerResponse::Handled;
    std::optional<std::string> bad = bad_headers(req);
    if (!bad) bad = bad_host(req);
    if (!bad) return answer_preflight(req, res) ? httplib::Server::HandlerResponse::Handled
                                                : httplib::Server::HandlerResponse::Unhandled;
    // The body's end is unknown, or the body is left unread by an answer before routing: the
    // client is told to drop the connection (httplib 0.11 would take the body for the next request).
    close_connection(req, res);
    send_json(res, 400, error_body(*bad, "invalid_request_error", ""));
    return httplib::Server::HandlerResponse::Handled;
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, error_body(what, "server_error", ""));
  });
  h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already wrote its own error body
    // httplib answers a known path with another method 404 (GET, HEAD) or 400 (POST, PUT, ...
    // without a handler); both are a 405 naming the allowed method, as vLLM (Starlette) answers.
    const auto method = allowed_method(req.path);
    if (method && req.method != *method && !(*method == "GET" && req.method == "HEAD")) {
      res.set_header("Allow", *method == "GET" ? "GET, HEAD" : *method);  // httplib answers HEAD where GET is
      send_json(res, 405,
                error_body(fmt::format("Method Not Allowed: {} {} (this path answers {})", req.method, req.path, *method),
                           "invalid_request_error", ""));
      return;
    }
    // httplib's own 400 and 414: the request's bytes were not all read, so what follows on the
    // connection is no request.
    if (res.status == 400 || res.status == 414) close_connection(req, res);
    if (res.status == 404)
      send_json(res, 404, error_body(fmt::format("no route {} {}", req.method, req.path), "NotFoundError", ""));
    else if (res.status == 413)
      send_too_large(res, options_.max_body_bytes);
    else if (res.status == 400)
      send_json(res, 400, error_body(unparsed_request_message(req), "invalid_request_error", ""));
    else if (res.status == 414)
      send_json(res, 414,
                error_body(fmt::format("the request line is longer than {} bytes", CPPHTTPLIB_REQUEST_URI_MAX_LENGTH),
                           "invalid_request_error", ""));
    else
      send_json(res, res.status, error_body(fmt::format("HTTP {}", res.status), "invalid_request_error", ""));
  });
}

// httplib 0.11 caps only a Content-Length body (payload_max_length): a chunked one it reads whole
// into memory on every route but the two that read their own (capped in generation_routes.cpp),
// and a body in another transfer coding (`gzip`) until the connection closes, so one client could
// fill the server's memory. A transfer coding other than chunked is a 501 (RFC 9112 6.1); a
// chunked body sent where no route reads one (GET /health, POST /nope) is not read at all: the
// request is routed as bodyless and the client told to drop the connection, since the body is
// still on it. Returns whether it answered.
bool Server::answer_transfer_encoding(const httplib::Request& req, httplib::Response& res) const {
  std::string coding = req.get_header_value("Transfer-Encoding");
  std::transform(coding.begin(), coding.end(), coding.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (coding != "chunked") {
    close_connection(req, res);
    send_json(res, 501,
              error_body(fmt::format("Transfer-Encoding '{}' is not supported: send the body with a Content-Length "
                                     "or 'Transfer-Encoding: chunked'",
                                     req.get_header_value("Transfer-Encoding")),
                         "invalid_request_error", ""));
    return true;
  }
  const bool reads_body = req.method == "POST" && allowed_method(req.path) == "POST";  // the POST routes
  if (!reads_body) {
    close_connection(req, res);
    auto& bodyless = const_cast<httplib::Request&>(req);  // httplib's own object, as above
    bodyless.headers.erase("Transfer-Encoding");
    bodyless.headers.erase("Content-Length");
    bodyless.set_header("Content-Length", "0");
  }
  return false;
}

// A client that waits for "100 Continue" before sending a body past the cap is answered 413 at
// once, the connection closed. (A body already on its way is read and dropped, as httplib does:
// closing with it unread would reset the connection under the 413 the client has not read yet.)
// Returns whether it answered.
bool Server::answer_too_large(const httplib::Request& req, httplib::Response& res) const {
  const std::optional<uint64_t> length = byte_count(req.get_header_value("Content-Length"));
  if (!length || *length <= options_.max_body_bytes) return false;
  close_connection(req, res);
  send_too_large(res, options_.max_body_bytes);
  return true;
}

// A browser asks before a cross-origin request that is not "simple" (a JSON POST, an
// Authorization header): OPTIONS with Origin and Access-Control-Request-Method, on any path, as
// Starlette's middleware answers it ahead of the routes.
bool Server::answer_preflight(const httplib::Request& req, httplib::Response& res) const {
  if (!CorsPolicy::is_preflight(req.method, req.has_header("Origin"), req.has_header("Access-Control-Request-Method")))
    return false;
  const std::optional<std::string> asked_headers =
      req.has_header("Access-Control-Request-Headers")
          ? std::optional<std::string>(req.get_header_value("Access-Control-Request-Headers"))
          : std::nullopt;
  const PreflightAnswer a =
      cors_.preflight(req.get_header_value("Origin"), req.get_header_value("Access-Control-Request-Method"), asked_headers);
  res.status = a.status;
  for (const auto& [name, value] : a.headers) res.set_header(name, value);
  res.set_content(a.body, "text/plain; charset=utf-8");
  // httplib does not read an OPTIONS body: the client is told to drop the connection rather than
  // have the body taken for its next request.
  if ((req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0") ||
      req.has_header("Transfer-Encoding"))
    close_connection(req, res);
  return true;
}

namespace {
/// `why`: what failed, when known (the resolver's or bind's error), else the likely causes.
std::string cannot_listen(const std::string& host, int port, const std::string& why = "") {
  return fmt::format("cannot listen on {}:{} ({})", host, port,
                     why.empty() ? "the port is in use, or the host is not an address of this machine" : why);
}

/// bind(2)'s errno as the user's next step.
std::string bind_failure(int err) {
  switch (err) {
    case EADDRINUSE: return "the port is in use";
    case EADDRNOTAVAIL: return "the host is not an address of this machine";
    case EACCES: return "permission denied: ports below 1024 need privileges";
    default: return std::strerror(err);
  }
}
}  // namespace

void check_can_listen(const std::string& host, int port) {
  if (port == 0) return;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0 || !found)
    throw Error(cannot_listen(host, port, rc != 0 ? fmt::format("the host does not resolve: {}", ::gai_strerror(rc)) : ""));
  bool ok = false;
  int err = 0;
  for (addrinfo* a = found; a != nullptr && !ok; a = a->ai_next) {  // as httplib: the first that binds
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;  // the server's own option (install_routes): a port a server just left is free
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    ok = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok) err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (!ok) throw Error(cannot_listen(host, port, err != 0 ? bind_failure(err) : ""));
}

int Server::bind() {
  if (port_ != 0) return port_;
  const int p = options_.port == 0 ? http_->bind_to_any_port(options_.host.c_str())
                                   : (http_->bind_to_port(options_.host.c_str(), options_.port) ? options_.port : -1);
  if (p <= 0) throw Error(cannot_listen(options_.host, options_.port));
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
  // library): a burst of clients (a load test opening 128 connections at once) then overflows
  // it, and the kernel drops their SYNs, which clients resend only after 1 s, 3 s, ... Listening
  // again on the bound socket sets the backlog (Linux); the kernel caps it at net.core.somaxconn.
  if (listen_fd_ >= 0) ::listen(listen_fd_, 4096);
  port_ = p;
  read_watch_ = std::make_unique<RequestReadWatch>(port_, options_.request_timeout);
  return port_;
}

void Server::request_read(const httplib::Request& req) {
  if (read_watch_ && req.remote_port >= 0) read_watch_->answering(req);
}

int Server::start() {
  const int p = bind();
  thread_ = std::thread([this] { listen(); });
  // listen_after_bind() flips is_running() once it accepts; bounded so a failure cannot hang.
  for (int i = 0; i < 500 && !http_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return p;
}

void Server::run() {
  bind();
  listen();
}

void Server::listen() {
  {
    std::lock_guard<std::mutex> lock(listen_mu_);
    if (stop_asked_) return;
    listening_ = true;
  }
  http_->listen_after_bind();
  std::lock_guard<std::mutex> lock(listen_mu_);
  listen_done_ = true;
}

void Server::stop_listening() {
  {
    std::lock_guard<std::mutex> lock(listen_mu_);
    stop_asked_ = true;  // a listen() that has not passed its check now returns at once
  }
  // One that has: stop its loop once it runs (or once listen() has returned: nothing to stop).
  while (true) {
    {
      std::lock_guard<std::mutex> lock(listen_mu_);
      if (!listening_ || listen_done_) return;
    }
    if (http_->is_running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  http_->stop();
}

void Server::end_connection_reads() {
  {
    std::lock_guard<std::mutex> lock(listen_mu_);
    if (!listening_ || listen_done_) return;
  }
  const auto answered_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (answering_ > 0 && std::chrono::steady_clock::now() < answered_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  while (true) {
    {
      std::lock_guard<std::mutex> lock(listen_mu_);
      if (!listening_ || listen_done_) return;
    }
    shut_connection_reads(port_);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Server::stop() {
  if (http_) stop_listening();
  if (thread_.joinable()) {
    end_connection_reads();
    thread_.join();
  }
}

void Server::shutdown(std::chrono::milliseconds timeout, const std::function<bool()>& cut_short) {
  using clock = std::chrono::steady_clock;
  // From now on /health and new generation requests are answered 503, each answer closing its
  // connection. The listening socket stays open until the running requests are done, so that a
  // health check gets its 503 instead of a refused connection.
  draining_ = true;
  const auto deadline = clock::now() + timeout;
  while (engine_.in_flight() > 0 && clock::now() < deadline && !(cut_short && cut_short()))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Whatever still runs ends at its next token; a request that slipped in after the drain began
  // is refused (503).
  engine_.cancel_all();
  while (engine_.in_flight() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the next step
  stop_listening();  // no new connections; run() returns once the open ones have ended
  end_connection_reads();
  if (thread_.joinable()) thread_.join();
}

}  // namespace lg::server
