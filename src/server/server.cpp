#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>

#include "server/connection_watch.h"
#include "server/openai.h"
#include "support/error.h"

namespace lg::server {

namespace {

using nlohmann::json;

constexpr size_t kHandlerThreads = 128;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

json chunk_json(const PreparedRequest& job, const json& choice) {
  return {{"id", job.id},
          {"object", job.kind == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", job.created},
          {"model", job.model},
          {"choices", json::array({choice})}};
}

json piece_choice(const PreparedRequest& job, const std::string& text, const json& finish) {
  if (job.kind == Endpoint::chat) {
    json delta = json::object();
    if (!text.empty()) delta["content"] = text;
    return {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}};
  }
  return {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish}};
}

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

// The media type of a Content-Type value: lowercased, parameters (`; charset=utf-8`) dropped.
std::string media_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return t;
}

// The methods each route answers; another method on one of these paths is a 405, not a 404.
const std::vector<std::pair<std::string, std::string>>& route_methods() {
  static const std::vector<std::pair<std::string, std::string>> routes = {{"/health", "GET"},
                                                                          {"/v1/models", "GET"},
                                                                          {"/v1/completions", "POST"},
                                                                          {"/v1/chat/completions", "POST"}};
  return routes;
}

}  // namespace

Server::Server(Engine& engine, const ServerOptions& options)
    : engine_(engine),
      options_(options),
      chat_template_(chat::ChatTemplate::load(engine.model_dir(), options.chat_template_file,
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
  h.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  h.set_payload_max_length(options_.max_body_bytes);
  // A handler waits for its request's text while the engine generates, so the pool bounds how
  // many requests can be in flight (and batched) at once; httplib's default is 8.
  h.new_task_queue = [] { return new httplib::ThreadPool(kHandlerThreads); };
  h.set_read_timeout(30, 0);
  h.set_write_timeout(30, 0);

  h.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", engine_.model_id()},
                  {"object", "model"},
                  {"created", now_unix()},
                  {"owned_by", "lanegraph"},
                  {"max_model_len", engine_.context()}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
  });

  // Validation happens before any byte is sent, so every bad request is a clean 400 even when
  // it asked for a stream.
  auto handle = [this](Endpoint kind, const httplib::Request& req, const std::string& body, httplib::Response& res) {
    std::shared_ptr<PreparedRequest> job;
    try {
      job = std::make_shared<PreparedRequest>(prepare_request(engine_, chat_template_, kind, body));
    } catch (const ModelNotFound& e) {
      send_json(res, 404, error_body(e.what(), "NotFoundError", e.param()));
      return;
    } catch (const RequestError& e) {
      send_json(res, 400, error_body(e.what(), "invalid_request_error", e.param()));
      return;
    }
    const int64_t default_max = job->default_max;

    if (!job->gen.stream) {
      // Nothing is written until the end, so only the socket tells that the client hung up; then
      // generation stops at the next token and its blocks go to the other requests. The answer
      // below is then written to a closed socket, which httplib tolerates.
      const ConnectionWatch watch(req);
      const EngineResult r =
          engine_.generate(job->prompt_ids, job->gen, default_max, nullptr, [&watch] { return watch.gone(); });
      send_json(res, 200, response_body(*job, r));
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [this, job, default_max](size_t, httplib::DataSink& sink) {
      auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
      try {
        bool ok = true;
        if (job->kind == Endpoint::chat) {
          json first = {{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                        {"finish_reason", nullptr}};
          ok = write(sse(chunk_json(*job, first)));
        }
        if (!ok) return false;
        const EngineResult r = engine_.generate(job->prompt_ids, job->gen, default_max, [&](const std::string& piece) {
          return write(sse(chunk_json(*job, piece_choice(*job, piece, nullptr))));
        });
        ok = write(sse(chunk_json(*job, piece_choice(*job, "", r.finish_reason))));
        if (ok && job->gen.include_usage) {
          json last = chunk_json(*job, nullptr);
          last["choices"] = json::array();
          last["usage"] = usage_json(r);
          ok = write(sse(last));
        }
        if (ok) ok = write("data: [DONE]\n\n");
      } catch (const std::exception& e) {
        // The status line is already sent: the error travels as an event, as vLLM does.
        write(sse(error_body(e.what(), "server_error", "")));
      }
      sink.done();
      return true;
    });
  };
  // The body is read here, through a content reader, rather than by httplib before the handler:
  // httplib caps an application/x-www-form-urlencoded body (plain `curl -d`) at 8 KB with a 413
  // that says nothing of the content type. Read whole (up to max_body_bytes, else 413), any
  // declared type other than application/json is a 415 that says which header to send, at every
  // size, as vLLM answers (its validate_json_request).
  auto read_and_handle = [handle](Endpoint kind, const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
    std::string body;
    bool ok;
    if (req.is_multipart_form_data()) {  // `curl -F`: drained and refused below
      ok = reader([](const httplib::MultipartFormData&) { return true; }, [](const char*, size_t) { return true; });
    } else {
      ok = reader([&body](const char* data, size_t n) {
        body.append(data, n);
        return true;
      });
    }
    if (!ok) {
      if (res.status == 413)
        send_json(res, 413, error_body("the request body is too large", "invalid_request_error", ""));
      else
        send_json(res, 400, error_body("the request body could not be read", "invalid_request_error", ""));
      return;
    }
    const std::string content_type = req.get_header_value("Content-Type");
    if (media_type(content_type) != "application/json") {
      send_json(res, 415,
                error_body(fmt::format("Unsupported Media Type '{}': only 'application/json' is allowed; send the "
                                       "header 'Content-Type: application/json' (curl: -H 'Content-Type: "
                                       "application/json')",
                                       content_type.empty() ? "(none)" : content_type),
                           "invalid_request_error", ""));
      return;
    }
    handle(kind, req, body, res);
  };
  h.Post("/v1/completions",
         [read_and_handle](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
           read_and_handle(Endpoint::completion, req, res, reader);
         });
  h.Post("/v1/chat/completions",
         [read_and_handle](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
           read_and_handle(Endpoint::chat, req, res, reader);
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
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already wrote its own error body
    // httplib answers a known path with another method 404 (GET, HEAD) or 400 (POST, PUT, ...
    // without a handler); both are a 405 naming the allowed method, as vLLM (Starlette) answers.
    for (const auto& [path, method] : route_methods()) {
      if (path != req.path || req.method == method || (method == "GET" && req.method == "HEAD")) continue;
      res.set_header("Allow", method);
      send_json(res, 405,
                error_body(fmt::format("Method Not Allowed: {} {} (this path answers {})", req.method, req.path, method),
                           "invalid_request_error", ""));
      return;
    }
    if (res.status == 404)
      send_json(res, 404, error_body(fmt::format("no route {} {}", req.method, req.path), "NotFoundError", ""));
    else if (res.status == 413)
      send_json(res, 413, error_body("the request body is too large", "invalid_request_error", ""));
    else
      send_json(res, res.status, error_body(fmt::format("HTTP {}", res.status), "invalid_request_error", ""));
  });
}

int Server::bind() {
  if (port_ != 0) return port_;
  const int p = options_.port == 0 ? http_->bind_to_any_port(options_.host.c_str())
                                   : (http_->bind_to_port(options_.host.c_str(), options_.port) ? options_.port : -1);
  if (p <= 0) throw Error(fmt::format("cannot listen on {}:{} (the port is in use, or the host is not an address of "
                                        "this machine)", options_.host, options_.port));
  port_ = p;
  return port_;
}

int Server::start() {
  const int p = bind();
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // listen_after_bind() flips is_running() once it accepts; bounded so a failure cannot hang.
  for (int i = 0; i < 500 && !http_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return p;
}

void Server::run() {
  bind();
  http_->listen_after_bind();
}

void Server::stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace lg::server
