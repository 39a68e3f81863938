// Fuzz target for the lines of an `lg batch` requests file (cli/batch_line.h): the input is one
// line. Reading it must give a request (a string custom_id, the endpoint, an object body) or the
// line's error ({"code", "message"}, the message starting "line 7: "); any exception escaping, a
// crash, a hang or a sanitizer report is a bug. An error keeps the custom_id whenever the line is
// a JSON object with a string custom_id, and that id then counts as used: the same line read again
// is a duplicate_custom_id error naming line 7 (a line that is not JSON at all is re-read as it
// was). A request's body then goes through its endpoint's parser as lg batch hands it on: a
// request or RequestError (lg batch's 400), nothing else. Seeds in fuzz/corpus/batch_line_fuzz/
// (good lines of both endpoints and near misses).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "cli/batch_line.h"
#include "server/request.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "batch_line_fuzz: %s\n", what);
  std::abort();
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The line's error, when it has one, is {"code": string, "message": "line N: ..."}.
void check_error(const lg::cli::BatchLine& l, size_t n) {
  if (l.kind) {
    if (!l.error.is_null()) fail("a request with an error");
    if (!l.body.is_object()) fail("a request whose body is not an object");
    if (!l.custom_id.is_string()) fail("a request without a string custom_id");
    return;
  }
  if (!l.error.is_object() || !l.error.contains("code") || !l.error["code"].is_string() ||
      !l.error.contains("message") || !l.error["message"].is_string())
    fail("a line neither a request nor an error {code, message}");
  if (!starts_with(l.error["message"].get<std::string>(), "line " + std::to_string(n) + ": "))
    fail("an error message that does not name its line");
  if (!l.custom_id.is_null() && !l.custom_id.is_string()) fail("a custom_id that is not a string");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::unordered_map<std::string, size_t> seen;
  const lg::cli::BatchLine l = lg::cli::parse_batch_line(text, 7, seen);
  check_error(l, 7);

  // The custom_id a plain parse sees must survive any error after the parse.
  const nlohmann::json plain = nlohmann::json::parse(text, nullptr, false);
  const bool parsed = !plain.is_discarded();
  if (parsed && plain.is_object() && plain.contains("custom_id") && plain["custom_id"].is_string() &&
      l.custom_id != plain["custom_id"])
    fail("the line's string custom_id lost");

  // Read again as line 9: the id is taken now.
  if (l.custom_id.is_string()) {
    if (!seen.count(l.custom_id.get<std::string>())) fail("a custom_id read but not marked as used");
    const lg::cli::BatchLine again = lg::cli::parse_batch_line(text, 9, seen);
    check_error(again, 9);
    const bool json_error = l.error.is_object() && l.error["code"] == "invalid_json";
    if (!json_error) {
      if (again.kind || again.error["code"] != "duplicate_custom_id") fail("a used custom_id accepted again");
      if (again.error["message"].get<std::string>().find("custom_id of line 7") == std::string::npos)
        fail("a duplicate that does not name the first line");
    }
  }

  if (l.kind) {
    try {
      if (*l.kind == lg::server::Endpoint::chat)
        (void)lg::server::parse_chat_request(l.body.dump());
      else
        (void)lg::server::parse_completion_request(l.body.dump());
    } catch (const lg::server::RequestError&) {
    }
  }
  return 0;
}
