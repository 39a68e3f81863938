// A count with its noun, "1 token" or "2 tokens", for messages whose counts may be 1: a format
// string's "{} tokens" said "the prompt has 1 tokens".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lg {

/// `n` and `noun`: singular for 1, else `plural`, or `noun` + "s" when no plural is given
/// (count_noun(1, "token") is "1 token", count_noun(0, "token") "0 tokens",
/// count_noun(2, "launch", "launches") "2 launches").
inline std::string count_noun(int64_t n, std::string_view noun, std::string_view plural = {}) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) {
    out += noun;
  } else if (!plural.empty()) {
    out += plural;
  } else {
    out += noun;
    out += 's';
  }
  return out;
}

}  // namespace lg
