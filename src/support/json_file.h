// JSON files read whole, with a nesting limit. Copying or printing a document recurses once per
// level, so 100,000 nested arrays in a file overflowed the stack of whatever copied it (lg inspect
// on a config.json, lg run on a tokenizer_config.json, lg lock on a lock file); nlohmann's parser
// itself does not recurse, so the limit is applied while parsing, before any copy is made. Every
// small JSON file lanegraph reads goes through here: config.json, generation_config.json, the
// safetensors index, tokenizer_config.json, special_tokens_map.json, lock and golden files.
// (tokenizer.json has its own SAX reader with a tighter limit; request bodies have lg serve's.)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lg {

/// JSON files nested at most this many levels are read; deeper is an lg::Error. Far above any real
/// file (config.json nests 3 levels), and shallow enough that a copy of the document fits a stack.
inline constexpr int kMaxJsonFileDepth = 10000;

/// The text of a JSON file as a document; lg::Error "SOURCE: malformed JSON: ..." or "SOURCE: the
/// JSON is nested more than 10000 levels deep", `source_name` standing for the file.
nlohmann::json parse_json_text(const std::string& text, const std::string& source_name);

/// What nlohmann's exception says, without its "[json.exception.parse_error.101] " prefix (a class
/// and number that mean nothing to a user): "parse error at line 2, column 1: syntax error while
/// parsing object key - unexpected end of input; expected string literal". Every message that
/// reports a malformed JSON file, header or body is built from it. The token it last read is cut
/// to its last 60 bytes ("last read: '...aaaa"), however long it was.
std::string json_error_text(const nlohmann::json::exception& e);

/// Throws nlohmann::json::parse_error naming the offset of `text`'s first NUL byte, if any. JSON
/// text holds none (a NUL in a string must be written \u0000), and nlohmann's lexer takes one for
/// the end of its input: `{"a":1}\0garbage` parsed as `{"a":1}`, the rest dropped without a word.
/// Every parse of a request body or batch line calls this first.
void refuse_nul_byte(std::string_view text);

/// Reads `path` (at most kMaxTextInputBytes) and parses it as parse_json_text does; lg::Error
/// naming the file if it cannot be opened too.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace lg
