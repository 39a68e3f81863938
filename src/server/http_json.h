// JSON answers over httplib, shared by the server's route files: a body with its status, and the
// 503 of a busy or draining server.
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

}  // namespace lg::server
