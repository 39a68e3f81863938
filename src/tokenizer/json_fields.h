// Reading tokenizer.json / tokenizer_config.json fields with errors that name the file and the
// field path ("tokenizer.json: decoder.decoders[2].type: ..."), shared by every component's
// loader so that an unsupported or malformed component is always reported the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "support/error.h"

namespace lg::tokenizer {

/// The file a component is read from; every failure names it and the field.
class JsonFields {
 public:
  explicit JsonFields(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  /// Throws lg::Error "<file>: <field>: <what>".
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file_ + ": " + field + ": " + what);
  }

  /// obj[key]; fails "missing" if obj is not an object or has no such key.
  const nlohmann::json& require(const nlohmann::json& obj, const char* key, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key)) fail(field, "missing");
    return obj[key];
  }

  /// obj["type"] as a string (field names the component, e.g. "decoder.decoders[1]").
  std::string type_of(const nlohmann::json& obj, const std::string& field) const {
    const nlohmann::json& t = require(obj, "type", field + ".type");
    if (!t.is_string()) fail(field + ".type", "expected a string");
    return t.get<std::string>();
  }

  /// A string field.
  std::string string(const nlohmann::json& obj, const char* key, const std::string& field) const {
    const nlohmann::json& v = require(obj, key, field + "." + key);
    if (!v.is_string()) fail(field + "." + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

  /// A boolean field, or `fallback` when absent or null.
  bool flag(const nlohmann::json& obj, const char* key, bool fallback, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    if (!obj[key].is_boolean()) fail(field + "." + key, "expected true or false, got " + obj[key].dump());
    return obj[key].get<bool>();
  }

  /// Fails unless obj[key] is absent, null or equal to `want` (a setting lanegraph supports only
  /// one way).
  void expect(const nlohmann::json& obj, const char* key, const nlohmann::json& want, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return;
    if (obj[key] != want)
      fail(field + "." + key, "unsupported value " + obj[key].dump() + " (lanegraph supports " + want.dump() + ")");
  }

  /// A non-negative integer field that fits in size_t, or `fallback` when absent.
  size_t count(const nlohmann::json& obj, const char* key, size_t fallback, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    const nlohmann::json& v = obj[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(field + "." + key, "expected a non-negative integer, got " + v.dump());
    return v.get<size_t>();
  }

 private:
  std::string file_;
};

}  // namespace lg::tokenizer
