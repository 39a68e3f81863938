// lg::Error: the one exception type lanegraph throws for bad input (a malformed file, a missing
// tensor, an unsupported config). Its message is meant for the user: it names the file, field or
// tensor at fault. Programming errors use assertions instead.
#pragma once

#include <stdexcept>
#include <string>

namespace lg {

/// A user-facing error: what() names the file, line, field or tensor at fault.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace lg
