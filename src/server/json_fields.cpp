#include "server/json_fields.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "server/request.h"

namespace lg::server {

using nlohmann::json;

bool integral_float(const json& v) {
  return v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::trunc(v.get<double>());
}

std::string number_text(const json& v) {
  // From 2^64 (no 64-bit integer reads as a double this large, so the digits cannot look in range)
  // up to 10^25 (the digits are few; 1e300 stays 1e+300).
  if (integral_float(v) && std::fabs(v.get<double>()) >= kTwo64 && std::fabs(v.get<double>()) < 1e25)
    return fmt::format("{:.0f}", v.get<double>());
  return v.dump();
}

double number(const json& v, const char* name) {
  if (!v.is_number()) throw RequestError(name, fmt::format("'{}' must be a number, got {}", name, v.type_name()));
  return v.get<double>();
}

int64_t integer(const json& v, const char* name) {
  // JSON has one number type: an integer past the 64-bit ones (1e20, 100000000000000000000)
  // parses as a double, and is too large (or small) rather than "not an integer". A double of
  // exactly -2^63 is one of those too: -2^63 itself parses as an integer, and -2^63 - 1 (to
  // -2^63 - 1024) rounds to that double.
  if (integral_float(v)) {
    const double d = v.get<double>();
    if (d >= kTwo63) throw RequestError(name, fmt::format("'{}' is too large: {}", name, number_text(v)));
    if (d <= -kTwo63) throw RequestError(name, fmt::format("'{}' is too small: {}", name, number_text(v)));
    return static_cast<int64_t>(d);
  }
  if (!v.is_number_integer())
    throw RequestError(name, fmt::format("'{}' must be an integer, got {}", name, v.is_number() ? v.dump() : v.type_name()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw RequestError(name, fmt::format("'{}' is too large: {}", name, number_text(v)));
  return v.get<int64_t>();
}

}  // namespace lg::server
