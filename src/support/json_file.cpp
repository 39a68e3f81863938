#include "support/json_file.h"

#include <fstream>

#include "support/error.h"
#include "support/text_input.h"

namespace lg {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open (missing or unreadable)");
  return parse_json_text(read_text_input(in, path.string()), path.string());
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0)
    if (const auto close = m.find("] "); close != std::string::npos) m.erase(0, close + 2);
  return m;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& source_name) {
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
