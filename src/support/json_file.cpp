#include "support/json_file.h"

#include <fstream>

#include "support/error.h"
#include "support/text_input.h"

namespace lg {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  // A directory opens as a stream that reads nothing ("malformed JSON: unexpected end of input").
  if (std::filesystem::is_directory(path, ec)) throw Error(path.string() + ": is a directory, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open (missing or unreadable)");
  return parse_json_text(read_text_input(in, path.string()), path.string());
}

namespace {

// nlohmann ends a syntax error with "; last read: '<token>'" (then maybe "; expected ..."), the
// whole token however long: an unterminated string of a 4 MiB request body made a 4 MiB error
// message, sent back to the client. The token's tail is where the error is; longer ones keep it.
void shorten_last_read(std::string& m) {
  constexpr size_t kKeep = 60;
  static const std::string kLastRead = "; last read: '";
  const size_t start = m.find(kLastRead);
  if (start == std::string::npos) return;
  const size_t begin = start + kLastRead.size();
  size_t end = m.rfind("'; expected ");
  if (end == std::string::npos || end < begin) end = m.size() - 1;
  if (end < begin || m[end] != '\'' || end - begin <= kKeep + 3) return;
  size_t from = end - kKeep;
  while (from < end && (static_cast<unsigned char>(m[from]) & 0xC0) == 0x80) ++from;  // not inside a UTF-8 character
  m.replace(begin, from - begin, "...");
}

}  // namespace

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0)
    if (const auto close = m.find("] "); close != std::string::npos) m.erase(0, close + 2);
  shorten_last_read(m);
  return m;
}

void refuse_nul_byte(std::string_view text) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw nlohmann::json::parse_error::create(101, nul + 1, "syntax error while parsing value - a NUL byte, which JSON text never holds",
                                              nullptr);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& source_name) {
  // nlohmann stops at a NUL byte and calls it "unexpected end of input" (a binary file read as JSON).
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw Error(source_name + ": malformed JSON: a NUL byte at offset " + std::to_string(nul) + " (not a text file)");
  const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonFileDepth)
      throw Error(source_name + ": the JSON is nested more than " + std::to_string(kMaxJsonFileDepth) +
                  " levels deep");
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source_name + ": malformed JSON: " + json_error_text(e));
  }
}

}  // namespace lg
