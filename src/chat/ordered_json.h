// JSON parsed as Python's json.loads reads it, for what a chat template gets: object keys keep
// their order (a template's tojson and dict.items() follow it), and a repeated key keeps its first
// position with its last value. nlohmann's own ordered_json parse finds each key by a linear scan,
// so one object of n keys costs n^2/2 comparisons (6 s for 50,000 keys, minutes for a 4 MiB
// body); this parse indexes each open object's keys, in linear time.
#pragma once

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

namespace lg::chat {

/// What parse_ordered_json throws for text whose arrays/objects nest deeper than its bound.
struct JsonTooDeep : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses `text`. Throws nlohmann::ordered_json::exception (parse_error) for malformed JSON,
/// with nlohmann's message (byte position and what was expected), and JsonTooDeep when arrays
/// and objects nest more than `max_depth` levels (`[[1]]` is 2): a bound checked while parsing,
/// so that JSON text inside a value (a tool call's arguments string) is never built deeper than
/// the rest of a request may be (copying a value recurses per level, as Python's json and Jinja2
/// do when it is rendered).
nlohmann::ordered_json parse_ordered_json(std::string_view text,
                                          std::size_t max_depth = std::numeric_limits<std::size_t>::max());

}  // namespace lg::chat
