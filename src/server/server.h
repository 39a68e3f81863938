// lg serve's HTTP front: the OpenAI-compatible endpoints that vLLM and llama.cpp users expect
// (GET /health, GET /v1/models[/{id}], GET /metrics, POST /v1/completions, POST
// /v1/chat/completions, streaming as Server-Sent Events) over one Engine. Every connection runs on
// its own thread (ElasticThreadPool), so requests that wait on generation never delay /health,
// /metrics or a 400; a full waiting queue is a 503 with Retry-After; shutdown() drains. Runs
// in-process on any port, 0 for an ephemeral one, so tests start it, call it over 127.0.0.1 and
// stop it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "chat/chat_template.h"
#include "server/cors.h"
#include "server/engine.h"
#include "server/read_deadline.h"
#include "server/request.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace lg::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                          ///< 0: an ephemeral port (see Server::port())
  size_t max_body_bytes = 4 * 1024 * 1024;  ///< larger bodies get 413
  /// The chat template: the model directory's own unless a file is given (lg serve --chat-template).
  std::optional<std::filesystem::path> chat_template_file{};
  chat::RendererOptions chat_renderer{};  ///< bounds of the Jinja2 renderer (time, size, workers)
  /// How long an idle keep-alive connection is kept open waiting for its next request (its
  /// thread polls meanwhile). httplib's default is 5 s.
  int keep_alive_s = 2;
  /// How long a connection may take to send a whole request (head and body), counted from its
  /// accept or its last answer, idle keep-alive time included; then it is closed
  /// (RequestReadWatch). The per-read timeout (30 s) alone let a client trickling a byte at a time
  /// hold a thread for ever.
  std::chrono::milliseconds request_timeout{30000};
  /// Which web pages may call the server from a browser (docs/server.md, CORS): every origin by
  /// default, as vLLM.
  CorsOptions cors{};
};

/// Throws lg::Error, in the words Server::bind uses, when a server could not listen on host:port
/// now (the port is in use, or the host is not an address of this machine): `lg serve` asks before
/// it spends minutes loading a model, and Server::bind still decides (the port may be taken in
/// between). Port 0 (any free port) is always possible.
void check_can_listen(const std::string& host, int port);

class Server {
 public:
  /// Holds `engine` (which must outlive the server) and reads the model's chat template (no
  /// renderer is started yet). Binds nothing yet. Throws lg::Error for an unreadable
  /// options.chat_template_file or an invalid options.cors; a broken template of the model is
  /// reported per chat request.
  Server(Engine& engine, const ServerOptions& options);
  ~Server();  ///< stops the server if it is running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds host:port (once; later calls return the same port). Throws lg::Error if it cannot.
  int bind();
  /// Binds host:port and serves on a background thread; returns the bound port. Throws
  /// lg::Error if the address cannot be bound.
  int start();
  /// Binds and serves on the calling thread until stop() or shutdown() (from a signal or another
  /// thread); returns at once if shutdown() came first.
  void run();
  /// Stops serving and joins the background thread. Safe to call more than once.
  void stop();
  /// A graceful stop (SIGTERM): while the requests running finish, for up to `timeout` or until
  /// `cut_short` (polled every 50 ms, e.g. a second Ctrl-C) says to stop waiting, the server still
  /// accepts connections but answers /health 503 {"status": "draining"} and every new generation
  /// request 503, each answer with `Connection: close`; what still runs then is cancelled (streams
  /// end with finish_reason "abort"), and the listening socket is closed. Returns once every
  /// request has ended; run() then returns too. Safe to call from any thread, once.
  void shutdown(std::chrono::milliseconds timeout, const std::function<bool()>& cut_short = {});
  /// True once shutdown() began.
  bool draining() const { return draining_; }
  /// The bound port (after start()/run() bound it), else 0.
  int port() const { return port_; }
  /// The chat template the chat endpoint renders with.
  const chat::ChatTemplate& chat_template() const { return chat_template_; }

 private:
  void install_routes();
  void install_info_routes();
  void install_generation_routes();
  /// One POST /v1/completions or /v1/chat/completions with its body read: prepared, handed to
  /// the engine and answered whole or streamed (generation_routes.cpp).
  void handle_generation(Endpoint kind, const httplib::Request& req, const std::string& body, httplib::Response& res);
  void install_error_handlers();
  /// Answers a CORS preflight (true), or leaves the request to the routes (false).
  bool answer_preflight(const httplib::Request& req, httplib::Response& res) const;
  /// For a request that waits for "100 Continue": a Content-Length past
  /// ServerOptions::max_body_bytes is answered 413, the connection closed (true), else false.
  bool answer_too_large(const httplib::Request& req, httplib::Response& res) const;
  /// A request with a Transfer-Encoding: 501 for a coding other than chunked (true), else left to
  /// the routes (false), a chunked body made bodyless where no route reads it.
  bool answer_transfer_encoding(const httplib::Request& req, httplib::Response& res) const;
  /// httplib's listen loop on this thread, unless shutdown() came first (see listen_state_).
  void listen();
  /// Once the listening socket is closed, httplib's loop returns only when every connection's
  /// thread has ended, and a thread reading a request waits up to its 30 s read timeout for each
  /// next byte: a client trickling its headers or body held SIGTERM's exit as long as it went
  /// on. Until the loop is done, the read side of each connection still open is shut
  /// (shut_connection_reads), so such a read ends at once. httplib stops writing to a socket
  /// whose read side is shut (its is_writable peeks for end-of-file), so the answers still being
  /// written go first: up to 2 s for the streams and answers counted in answering_, then 100 ms
  /// for a whole answer's write.
  void end_connection_reads();
  /// Stops httplib's listen loop whenever it runs: httplib's stop() does nothing before the loop
  /// has started (is_running() false), so a SIGTERM between bind() and the loop's start would
  /// leave run() listening forever.
  void stop_listening();
  /// `req` is read whole (its body too, if a route reads one): its connection's read deadline
  /// stops until the answer has gone out (RequestReadWatch).
  void request_read(const httplib::Request& req);

  Engine& engine_;
  ServerOptions options_;
  CorsPolicy cors_;
  chat::ChatTemplate chat_template_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;
  /// Started by bind(), once the port is known; the thread pool asks it to shed a connection.
  std::unique_ptr<RequestReadWatch> read_watch_;
  std::atomic<bool> draining_{false};
  /// Generation requests whose answer is not yet handed to httplib whole (a stream: not yet done
  /// with); end_connection_reads() waits for them.
  std::atomic<int> answering_{0};
  /// listen()'s progress against shutdown(), under listen_mu_: whether a stop was asked for,
  /// whether listen() passed its check (and will run httplib's loop), and whether it returned.
  std::mutex listen_mu_;
  bool stop_asked_ = false, listening_ = false, listen_done_ = false;
};

}  // namespace lg::server
