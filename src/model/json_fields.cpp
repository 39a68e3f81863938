#include "model/json_fields.h"

#include <cmath>

#include <fmt/format.h>

#include "support/error.h"

namespace lg::model::json_fields {

void wrong_type(const std::string& source, const std::string& field, std::string_view want, const nlohmann::json& got) {
  // "got null", not "got null null": a null's type name is its value.
  const std::string value = got.is_null() ? "" : " " + got.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  throw Error(fmt::format("{}: field '{}' must be {}, got {}{}", source, field, want, got.type_name(), value));
}

namespace {
const std::string& name_of(const std::string& key, const std::string& path) { return path.empty() ? key : path; }

[[noreturn]] void missing(const std::string& source, const std::string& key) {
  throw Error(fmt::format("{}: missing required field '{}'", source, key));
}
// An integer that fits int64: 2^63 and above parse as unsigned, and get<int64_t> would wrap them
// to negative ids.
bool is_int64(const nlohmann::json& v) {
  return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
}
}  // namespace

const nlohmann::json* find(const nlohmann::json& obj, const std::string& key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void out_of_int64_range(const std::string& source, const std::string& field, const nlohmann::json& got) {
  throw Error(fmt::format("{}: field '{}' is {}, out of the 64-bit integers' range", source, field, got.dump()));
}

std::optional<int64_t> opt_int(const nlohmann::json& obj, const std::string& key, const std::string& source,
                               const std::string& path) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  // Past int64 is out of range, not of the wrong type: it was "must be an integer, got number
  // 10000000000000000000".
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) out_of_int64_range(source, name_of(key, path), *v);
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 4096.0 is an integer written as a float by some exporters; accept it when exact.
  if (v->is_number_float()) {
    // In range before the cast: converting 1e300 to int64 is undefined behaviour, not a refusal.
    const double d = v->get<double>();
    if (d >= -9.0e18 && d <= 9.0e18 && d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
    if (std::fabs(d) > 9.0e18) out_of_int64_range(source, name_of(key, path), *v);
  }
  wrong_type(source, name_of(key, path), "an integer", *v);
}

std::optional<double> opt_number(const nlohmann::json& obj, const std::string& key, const std::string& source,
                                 const std::string& path) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(source, name_of(key, path), "a number", *v);
  return v->get<double>();
}

std::optional<bool> opt_bool(const nlohmann::json& obj, const std::string& key, const std::string& source,
                             const std::string& path) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(source, name_of(key, path), "true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> opt_string(const nlohmann::json& obj, const std::string& key,
                                      const std::string& source, const std::string& path) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(source, name_of(key, path), "a string", *v);
  return v->get<std::string>();
}

std::vector<int64_t> int_or_list(const nlohmann::json& obj, const std::string& key, const std::string& source) {
  const auto* v = find(obj, key);
  if (!v) return {};
  std::vector<int64_t> out;
  if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      const auto& e = (*v)[i];
      if (!is_int64(e)) wrong_type(source, fmt::format("{}[{}]", key, i), "an integer token id", e);
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  if (!is_int64(*v)) wrong_type(source, key, "a token id or a list of token ids", *v);
  out.push_back(v->get<int64_t>());
  return out;
}

// Each required read is its optional read (which refuses a wrong type) plus "missing" for absent.
int64_t req_int(const nlohmann::json& obj, const std::string& key, const std::string& source) {
  auto v = opt_int(obj, key, source);
  if (!v) missing(source, key);
  return *v;
}

double req_number(const nlohmann::json& obj, const std::string& key, const std::string& source) {
  auto v = opt_number(obj, key, source);
  if (!v) missing(source, key);
  return *v;
}

std::string req_string(const nlohmann::json& obj, const std::string& key, const std::string& source) {
  auto v = opt_string(obj, key, source);
  if (!v) missing(source, key);
  return *v;
}

const nlohmann::json& req_object(const nlohmann::json& obj, const std::string& key, const std::string& source,
                                 std::string_view want) {
  const auto* v = find(obj, key);
  if (!v) missing(source, key);
  if (!v->is_object()) wrong_type(source, key, want, *v);
  return *v;
}

}  // namespace lg::model::json_fields
