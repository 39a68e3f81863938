// JSON parsed as Python's json.loads reads it, for what a chat template gets: object keys keep
// their order (a template's tojson and dict.items() follow it), and a repeated key keeps its first
// position with its last value. nlohmann's own ordered_json parse finds each key by a linear scan,
// so one object of n keys costs n^2/2 comparisons (6 s for 50,000 keys, minutes for a 4 MiB
// body); this parse indexes each open object's keys, in linear time.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace lg::chat {

/// Parses `text`. Throws nlohmann::ordered_json::exception (parse_error) for malformed JSON,
/// with nlohmann's message (byte position and what was expected).
nlohmann::ordered_json parse_ordered_json(std::string_view text);

}  // namespace lg::chat
