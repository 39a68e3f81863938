// Token ids typed on the command line (`lg detokenize 750 282,2075`, `lg run --prompt-ids ...`):
// separate arguments or comma-separated in one, plain decimal digits only. An empty argument or
// item ('', "1,,2", "1,") is an error naming it, never skipped: an unset shell variable or a lost
// id would otherwise run silently on less than was asked for.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/error.h"

namespace lg::cli {

/// The ids of `args`, in order. `what` starts each message ("detokenize", "--prompt-ids"). Throws
/// lg::Error naming the argument or item for an empty one or one that is not decimal digits;
/// `check(id, item)` sees every item that is (id -1 for one past 2^31 - 1) and throws for those
/// the caller refuses (no token, outside the model's vocabulary), -1 always among them.
inline std::vector<int32_t> parse_token_id_args(const std::vector<std::string>& args, const std::string& what,
                                                const std::function<void(int64_t id, const std::string& item)>& check) {
  std::vector<int32_t> ids;
  for (size_t a = 0; a < args.size(); ++a) {
    const std::string& arg = args[a];
    if (arg.empty()) throw Error(what + ": argument " + std::to_string(a + 1) + " is empty, not a token id");
    size_t start = 0;
    for (size_t position = 1; start <= arg.size(); ++position) {
      size_t end = arg.find(',', start);
      if (end == std::string::npos) end = arg.size();
      const std::string item = arg.substr(start, end - start);
      start = end + 1;
      if (item.empty())
        throw Error(what + ": \"" + arg + "\" has an empty item at position " + std::to_string(position) +
                    " (ids are separated by one comma)");
      // Digits only: stoll also took "+5" and " 12", so a stray sign or space passed for an id.
      if (item.find_first_not_of("0123456789") != std::string::npos)
        throw Error(what + ": \"" + item + "\" is not a token id (ids are non-negative decimal integers" +
                    (item.find_first_of(" \t\n") != std::string::npos
                         ? "; ids in one argument are separated by commas, or give them as separate arguments)"
                         : ")"));
      uint64_t v = 0;
      const bool fits = std::from_chars(item.data(), item.data() + item.size(), v).ec == std::errc() &&
                        v <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
      check(fits ? static_cast<int64_t>(v) : -1, item);  // -1: past int32, refused by every caller
      ids.push_back(static_cast<int32_t>(v));
    }
  }
  return ids;
}

}  // namespace lg::cli
