// Reading one field of a request body (nlohmann::json) as OpenAI-compatible servers read it: a
// JSON null is the field left out, a float with an integral value is that integer (pydantic's lax
// mode), and a value of the wrong type or range is a RequestError naming the field.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace lg::server {

/// j[name], or nullptr when it is absent or null (clients send explicit nulls for defaults).
template <typename Json>
const Json* field(const Json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

/// 2^63 and 2^64 as doubles: the bounds of int64 and uint64 for a JSON number that parsed as one.
inline constexpr double kTwo63 = 9223372036854775808.0, kTwo64 = 18446744073709551616.0;

/// Whether v is a float with an integral value (3.0), which an integer field takes as that integer.
bool integral_float(const nlohmann::json& v);

/// v as a double. Throws RequestError naming `name` when it is not a number.
double number(const nlohmann::json& v, const char* name);

/// A number as an error message quotes it: an integer from 2^64 to 10^25, which JSON parsed as a
/// double (2^70, 1e20), in digits (1180591620717411303424, not 1.1805916207174113e+21: the
/// double's exact value, which is what the client wrote or the nearest double to it); anything
/// else as dump() writes it.
std::string number_text(const nlohmann::json& v);

/// v as an int64. Throws RequestError naming `name` when it is not an integer (an integral float
/// counts) or lies outside int64 (said as too large or too small, not as "not an integer").
int64_t integer(const nlohmann::json& v, const char* name);

}  // namespace lg::server
