// One line of an `lg batch` requests file (the OpenAI batch-file format) read up to the request
// body: {"custom_id": "...", "method": "POST", "url": "/v1/completions" | "/v1/chat/completions",
// "body": {...}}. What a line that is not a request gets instead is its error, {"code",
// "message"}, the message starting "line N: ", and still its custom_id when one can be read
// (batch_custom_id.h for a line that is not JSON). No model is involved yet: cmd_batch.cpp then
// runs the body through the endpoint's parser (server/openai.h); fuzz/batch_line_fuzz fuzzes this.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "chat/ordered_json.h"
#include "cli/batch_custom_id.h"
#include "server/request.h"

namespace lg::cli {

/// A line read: either `kind` and `body` (a JSON object) with a string `custom_id`, or `error`
/// with the custom_id the line names when one could be read (null otherwise).
struct BatchLine {
  nlohmann::json custom_id = nullptr;
  std::optional<server::Endpoint> kind;
  /// The request body, an object, when `kind` is set; its keys in the line's order, as lg serve
  /// reads a body (a chat template iterates the tools' and messages' objects: sorted keys made
  /// another prompt than the server's).
  nlohmann::ordered_json body;
  nlohmann::json error = nullptr;   ///< {"code", "message"} when the line is not a request
};

inline nlohmann::json batch_line_error(const std::string& code, const std::string& message) {
  return {{"code", code}, {"message", message}};
}

/// The custom_id a line that could not be read names (recover_custom_id: `text` may be the line's
/// first 64 MiB), marked used by line `n` in `seen`; null when it names none.
inline nlohmann::json recovered_custom_id(std::string text, size_t n, std::unordered_map<std::string, size_t>& seen) {
  const auto id = recover_custom_id(std::move(text));
  if (!id) return nullptr;
  seen.emplace(*id, n);
  return *id;
}

/// Reads line `n` (1-based) of a requests file. `seen` maps each custom_id met so far to its line:
/// a custom_id already there makes this line a "duplicate_custom_id" error (OpenAI's Batch API
/// requires custom_id to be unique within a file, so that every answer names one request); the
/// first line with it is read as usual. A line that is not JSON still marks the custom_id it
/// names as used, as it would be had it parsed. Throws nothing but std::bad_alloc.
inline BatchLine parse_batch_line(const std::string& text, size_t n, std::unordered_map<std::string, size_t>& seen) {
  using json = nlohmann::ordered_json;
  BatchLine l;
  const std::string where = fmt::format("line {}", n);
  auto recover = [&] { l.custom_id = recovered_custom_id(text, n, seen); };
  json j;
  try {
    // As lg serve reads a chat body (chat/ordered_json.h): keys in order, in linear time.
    j = chat::parse_ordered_json(text, server::kMaxJsonDepth);
  } catch (const chat::JsonTooDeep&) {
    l.error = batch_line_error("invalid_json", fmt::format("{}: the JSON is nested more than {} levels deep", where,
                                                           server::kMaxJsonDepth));
    recover();
    return l;
  } catch (const json::exception& e) {
    // A request line is one line of JSON: its position is a column ("at line 1, column 51" beside
    // "line 2" read as two lines).
    std::string m = server::json_error_message(e);
    if (const auto at = m.find("at line 1, column "); at != std::string::npos) m.replace(at, 18, "at column ");
    l.error = batch_line_error("invalid_json", where + ": not JSON: " + m);
    recover();
    return l;
  }
  if (!j.is_object()) {
    l.error = batch_line_error("invalid_request", where + ": a request line must be a JSON object");
    return l;
  }
  if (j.contains("custom_id")) l.custom_id = j["custom_id"];
  if (!l.custom_id.is_string()) {
    l.error = batch_line_error("invalid_request",
                               where + (l.custom_id.is_null() ? ": 'custom_id' is required (a string naming "
                                                                "the request in the output)"
                                                              : ": 'custom_id' must be a string, got " +
                                                                    std::string(l.custom_id.type_name())));
    l.custom_id = nullptr;
    return l;
  }
  const auto [first, fresh] = seen.emplace(l.custom_id.get<std::string>(), n);
  if (!fresh) {
    l.error = batch_line_error("duplicate_custom_id",
                               fmt::format("{}: 'custom_id' {} is already the custom_id of line {}: "
                                           "custom_id must be unique within the batch file",
                                           where, l.custom_id.dump(), first->second));
    return l;
  }
  if (!j.contains("method") || j["method"] != "POST") {
    l.error = batch_line_error("invalid_request", where + ": 'method' must be \"POST\"");
    return l;
  }
  const json url = j.contains("url") ? j["url"] : json(nullptr);
  server::Endpoint kind;
  if (url == "/v1/completions") kind = server::Endpoint::completion;
  else if (url == "/v1/chat/completions") kind = server::Endpoint::chat;
  else {
    l.error = batch_line_error("invalid_url", where + ": 'url' must be \"/v1/completions\" or "
                                                      "\"/v1/chat/completions\", got " + url.dump());
    return l;
  }
  if (!j.contains("body") || !j["body"].is_object()) {
    l.error = batch_line_error("invalid_request", where + ": 'body' must be a JSON object (the request body)");
    return l;
  }
  l.kind = kind;
  l.body = std::move(j["body"]);
  return l;
}

}  // namespace lg::cli
