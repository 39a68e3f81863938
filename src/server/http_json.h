// JSON answers over httplib, shared by the server's route files: a body with its status, the 413
// of a body past the limit and the 503 of a busy or draining server.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai.h"

namespace lg::server {

/// `body` as the response, its keys in the order they were written (a generation answer's are
/// OpenAI's order, openai.h; a nlohmann::json converts with its keys sorted).
inline void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

/// 503 with `Retry-After` (seconds) and OpenAI's error body: the waiting queue is full, or the
/// server is shutting down. A client (the OpenAI SDK retries 503s) tries again later or elsewhere.
inline void send_unavailable(httplib::Response& res, const std::string& message) {
  res.set_header("Retry-After", "1");
  send_json(res, 503, error_body(message, "service_unavailable", ""));
}

/// 413 naming the limit a body passed (a Content-Length over it, or a chunked body read past it).
inline void send_too_large(httplib::Response& res, size_t max_bytes) {
  send_json(res, 413,
            error_body("the request body is too large: more than " + std::to_string(max_bytes) + " bytes",
                       "invalid_request_error", ""));
}

}  // namespace lg::server
