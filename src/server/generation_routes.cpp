// POST /v1/completions and /v1/chat/completions: the body read and checked, the request handed to
// the engine, and its answer whole or streamed as Server-Sent Events; POST /tokenize and
// /detokenize read their bodies alike. Every check (the body, the
// prompt, a full waiting queue) answers before any byte of a stream is sent.
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

#include "server/choices.h"
#include "server/connection_watch.h"
#include "server/http_json.h"
#include "server/openai.h"
#include "server/server.h"
#include "server/tokenize.h"

namespace lg::server {

namespace {

// Ordered: chunks keep OpenAI's key order (id, object, created, model, choices), and a
// top_logprobs object its rank order (logprobs_json.h).
using nlohmann::ordered_json;

ordered_json chunk_json(const PreparedRequest& p, const ordered_json& choice) {
  return {{"id", p.id},
          {"object", p.kind == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", p.created},
          {"model", p.model},
          {"choices", ordered_json::array({choice})}};
}

ordered_json piece_choice(const PreparedRequest& p, size_t index, const EnginePiece& piece,
                          const ordered_json& finish, ordered_json logprobs) {
  ordered_json choice;
  if (p.kind == Endpoint::chat) {
    ordered_json delta = ordered_json::object();
    if (!piece.text.empty()) delta["content"] = piece.text;
    choice = {{"index", index}, {"delta", delta}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish}};
  } else {
    choice = {{"index", index}, {"text", piece.text}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish}};
  }
  if (p.token_ids) choice["token_ids"] = piece.token_ids;
  return choice;
}

std::string sse(const ordered_json& j) { return "data: " + dump(j) + "\n\n"; }

// `t` lowercased, without its spaces (header values compare so).
std::string lowercase_unspaced(std::string t) {
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return t;
}

// The media type of a Content-Type value: lowercased, parameters (`; charset=utf-8`) dropped.
std::string media_type(const std::string& content_type) {
  return lowercase_unspaced(content_type.substr(0, content_type.find(';')));
}

// The charset parameter of a Content-Type value, lowercased and unquoted; empty when none.
std::string charset(const std::string& content_type) {
  for (size_t at = content_type.find(';'); at != std::string::npos; at = content_type.find(';', at + 1)) {
    const size_t end = content_type.find(';', at + 1);
    std::string param = lowercase_unspaced(content_type.substr(at + 1, end == std::string::npos ? end : end - at - 1));
    if (param.rfind("charset=", 0) != 0) continue;
    param.erase(0, 8);
    param.erase(std::remove_if(param.begin(), param.end(), [](char c) { return c == '"' || c == '\''; }), param.end());
    return param;
  }
  return "";
}

// Writes a running request's events to `sink` until every choice ends (or the client goes: a
// failed write, or `watch` seeing the socket closed while nothing is written, as while the request
// waits). Each chunk carries one choice's output (its `index`), a choice's finish_reason (and
// stop_reason) in a chunk of its own as it ends; chat starts with a role chunk for every choice.
// With stream_options.continuous_usage_stats every chunk that carries a choice also carries the
// usage so far, as vLLM's do: the prompt's tokens and the tokens that choice generated up to that
// chunk (0 in chat's first, its total in its finish_reason's); the last usage chunk sums them.
void stream_events(const PreparedRequest& p, const Choices& choices, httplib::DataSink& sink,
                   const ConnectionWatch& watch) {
  auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
  const auto prompt_tokens = static_cast<int64_t>(p.prompt_ids.size());
  const size_t n = choices.jobs.size();
  // Per choice, the logprobs of tokens whose chunk is not written yet (their text held back), and
  // completions' characters before them: each chunk carries the logprobs of the tokens it brings.
  std::vector<std::vector<runtime::TokenLogprobs>> held(n);
  std::vector<int64_t> text_offset(n, 0), counted(n, 0);
  auto logprobs = [&](size_t i) -> ordered_json {
    ordered_json j = held[i].empty() ? ordered_json(nullptr) : choice_logprobs(p, held[i], text_offset[i]);
    held[i].clear();
    return j;
  };
  // A chunk of choice i's, with that choice's usage so far (vLLM's previous_num_tokens[i]).
  auto chunk = [&](const ordered_json& choice, int64_t generated) {
    ordered_json c = chunk_json(p, choice);
    if (p.gen.continuous_usage_stats) c["usage"] = usage_json(prompt_tokens, generated);
    return sse(c);
  };
  try {
    bool ok = true;
    for (size_t i = 0; ok && p.kind == Endpoint::chat && i < n; ++i) {
      ordered_json first = {{"index", i},
                            {"delta", {{"role", "assistant"}, {"content", ""}}},
                            {"logprobs", nullptr},
                            {"finish_reason", nullptr}};
      ok = write(chunk(first, 0));
    }
    if (!ok) {
      choices.cancel();
      return;
    }
    const std::vector<EngineResult> results = follow_choices(
        choices,
        [&](size_t i, const EnginePiece& piece, const EngineResult* finished) {
          counted[i] += static_cast<int64_t>(piece.token_ids.size());
          held[i].insert(held[i].end(), piece.logprobs.begin(), piece.logprobs.end());
          // Tokens whose text is held back (a stop string may be starting) send no empty chunk,
          // as vLLM sends none; with return_token_ids the chunk still carries their ids.
          if (!piece.empty() && (!piece.text.empty() || p.token_ids) &&
              !write(chunk(piece_choice(p, i, piece, nullptr, logprobs(i)), counted[i])))
            return ok = false;
          if (!finished) return true;
          counted[i] = finished->completion_tokens;  // all its tokens, whatever its pieces carried
          ordered_json last = piece_choice(p, i, EnginePiece{}, finished->finish_reason, logprobs(i));
          last["stop_reason"] = stop_reason_json(*finished);
          return ok = write(chunk(last, counted[i]));
        },
        [&watch] { return watch.gone(); });
    if (ok && p.gen.include_usage) {
      ordered_json last = chunk_json(p, nullptr);
      last["choices"] = ordered_json::array();
      last["usage"] = usage_json(results);
      ok = write(sse(last));
    }
    if (ok) write("data: [DONE]\n\n");
  } catch (const std::exception& e) {
    // The status line is already sent: the error travels as an event, and the stream ends as
    // every stream does, as vLLM's generators end theirs.
    if (write(sse(error_body(e.what(), "server_error", "")))) write("data: [DONE]\n\n");
  }
  sink.done();
}

/// The body of a generation request, read as install_generation_routes says; or nothing, when
/// this has answered the request itself (413, 400 or 415).
std::optional<std::string> read_json_body(const httplib::Request& req, const httplib::ContentReader& reader,
                                          size_t max_bytes, httplib::Response& res) {
  std::string body;
  size_t read = 0;
  bool too_large = false;
  bool ok;
  if (req.is_multipart_form_data()) {  // `curl -F`: drained and refused below
    ok = reader([](const httplib::MultipartFormData&) { return true; }, [](const char*, size_t) { return true; });
  } else {
    ok = reader([&](const char* data, size_t n) {
      read += n;
      if (read > max_bytes && !too_large) {
        too_large = true;
        std::string().swap(body);  // its memory back: the rest is only counted
      }
      if (!too_large) body.append(data, n);
      return true;
    });
  }
  if (ok && too_large) {
    send_json(res, 413,
              error_body(fmt::format("the request body is too large: {} bytes, more than {}", read, max_bytes),
                         "invalid_request_error", ""));
    return std::nullopt;
  }
  if (!ok) {
    if (res.status == 413)
      send_too_large(res, max_bytes);
    else
      send_json(res, 400, error_body("the request body could not be read", "invalid_request_error", ""));
    return std::nullopt;
  }
  const std::string content_type = req.get_header_value("Content-Type");
  if (media_type(content_type) != "application/json") {
    send_json(res, 415,
              error_body(fmt::format("Unsupported Media Type '{}': only 'application/json' is allowed; send the "
                                     "header 'Content-Type: application/json' (curl: -H 'Content-Type: "
                                     "application/json')",
                                     content_type.empty() ? "(none)" : content_type),
                         "invalid_request_error", ""));
    return std::nullopt;
  }
  // JSON is UTF-8 on the wire (RFC 8259 8.1): a body declared in another charset (UTF-16 from a
  // Windows client) was read as UTF-8 and refused as "not valid JSON at column 2".
  // ASCII is UTF-8's first 128 code points: a body declared us-ascii reads the same.
  if (const std::string cs = charset(content_type);
      !cs.empty() && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" && cs != "ascii") {
    send_json(res, 415,
              error_body(fmt::format("Unsupported charset '{}': the JSON body must be UTF-8 (send it as UTF-8, with "
                                     "'Content-Type: application/json' or '; charset=utf-8')",
                                     cs),
                         "invalid_request_error", ""));
    return std::nullopt;
  }
  return body;
}

}  // namespace

// Validation and admission happen before any byte is sent, so every bad request is a clean
// 400, and a full queue a 503, even when it asked for a stream.
void Server::handle_generation(Endpoint kind, const httplib::Request& req, const std::string& body,
                               httplib::Response& res) {
  if (draining_) {
    engine_.metrics().rejected("shutting_down");
    send_unavailable(res, "the server is shutting down");
    return;
  }
  std::shared_ptr<PreparedRequest> p;
  try {
    p = std::make_shared<PreparedRequest>(prepare_request(engine_, chat_template_, kind, body));
  } catch (const ModelNotFound& e) {
    send_json(res, 404, error_body(e.what(), "NotFoundError", e.param()));
    return;
  } catch (const RequestError& e) {
    send_json(res, 400, error_body(e.what(), "invalid_request_error", e.param()));
    return;
  }
  auto choices = std::make_shared<Choices>();
  try {
    *choices = start_choices(engine_, *p);
  } catch (const EngineBusy& e) {
    send_unavailable(res, e.what());
    return;
  }
  // Counted until the answer is handed to httplib (whole) or the stream is done with: a shutdown
  // shuts the connections' read sides only after these, since httplib stops writing to a
  // socket whose read side is shut.
  ++answering_;
  const auto answering = std::shared_ptr<void>(nullptr, [this](void*) { --answering_; });
  if (!p->gen.stream) {
    // Nothing is written until the end, so only the socket tells that the client hung up; then
    // generation stops at the next token and its blocks go to the other requests. The answer
    // below is then written to a closed socket, which httplib tolerates.
    const ConnectionWatch watch(req);
    const std::vector<EngineResult> results = follow_choices(*choices, nullptr, [&watch] { return watch.gone(); });
    send_json(res, 200, response_body(*p, results));
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  // A stream writes nothing while its request waits or its prompt is prefilled, and a write to
  // a peer that has closed usually succeeds (the kernel buffers it): the socket itself tells
  // that the client left, so that a queued stream leaves the queue. Found here, where the
  // connection is the handler's; the provider runs later on the same connection.
  auto watch = std::make_shared<const ConnectionWatch>(req);
  auto provider = [p, choices, watch](size_t, httplib::DataSink& sink) {
    stream_events(*p, *choices, sink, *watch);
    return true;
  };
  // Called when the response is done with, also when httplib never got to stream (the client
  // left before the headers went out): the request must not run on unwatched.
  auto release = [choices, answering](bool) { choices->cancel(); };
  // HTTP/1.0 has no chunked encoding (RFC 1945): its clients read the stream to the connection's
  // close, which httplib's provider without a length gives (it closes the connection after).
  if (req.version == "HTTP/1.0")
    res.set_content_provider("text/event-stream", std::move(provider), std::move(release));
  else
    res.set_chunked_content_provider("text/event-stream", std::move(provider), std::move(release));
}

void Server::install_generation_routes() {
  // The body is read here, through a content reader, rather than by httplib before the handler:
  // httplib caps an application/x-www-form-urlencoded body (plain `curl -d`) at 8 KB with a 413
  // that says nothing of the content type. Read whole (up to max_body_bytes, else 413), any
  // declared type other than application/json is a 415 that says which header to send, at every
  // size, as vLLM answers (its validate_json_request). httplib applies its own cap to a
  // Content-Length only: a chunked body is counted here, and past the cap the rest is read and
  // dropped (as httplib drops a Content-Length body past it) before the 413, or one client's
  // endless body would fill the server's memory. Drained, the client reads the 413 rather than a
  // broken pipe, and the connection stays usable.
  auto read_and_handle = [this, max_bytes = options_.max_body_bytes](Endpoint kind, const httplib::Request& req,
                                                                      httplib::Response& res,
                                                                      const httplib::ContentReader& reader) {
    const std::optional<std::string> body = read_json_body(req, reader, max_bytes, res);
    request_read(req);
    if (body) handle_generation(kind, req, *body, res);
  };
  http_->Post("/v1/completions",
              [read_and_handle](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
                read_and_handle(Endpoint::completion, req, res, reader);
              });
  http_->Post("/v1/chat/completions",
              [read_and_handle](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
                read_and_handle(Endpoint::chat, req, res, reader);
              });
  // vLLM's /tokenize and /detokenize (server/tokenize.h): their bodies read the same way, answered
  // on the connection's thread (no generation: nothing to wait for, even while draining).
  const auto answer = [this, max_bytes = options_.max_body_bytes](const httplib::Request& req, httplib::Response& res,
                                                                   const httplib::ContentReader& reader, bool tokenize) {
    const std::optional<std::string> body = read_json_body(req, reader, max_bytes, res);
    request_read(req);
    if (!body) return;
    try {
      send_json(res, 200, tokenize ? tokenize_body(engine_, chat_template_, *body) : detokenize_body(engine_, *body));
    } catch (const ModelNotFound& e) {
      send_json(res, 404, error_body(e.what(), "NotFoundError", e.param()));
    } catch (const RequestError& e) {
      send_json(res, 400, error_body(e.what(), "invalid_request_error", e.param()));
    }
  };
  http_->Post("/tokenize", [answer](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) { answer(req, res, reader, true); });
  http_->Post("/detokenize", [answer](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) { answer(req, res, reader, false); });
}

}  // namespace lg::server
