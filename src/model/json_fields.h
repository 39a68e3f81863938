// Typed access to the fields of a Hugging Face JSON file (config.json, generation_config.json).
// A JSON null counts as absent, as transformers writes `"bos_token_id": null` for "not set".
// Every error names the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lg::model::json_fields {

/// The field `key` of `obj`, or nullptr when absent or null.
const nlohmann::json* find(const nlohmann::json& obj, const std::string& key);

/// Optional typed reads: nullopt when absent/null; lg::Error "<source>: field '<key>' must be ..."
/// on a wrong type. `path` is the dotted name used in messages (defaults to key).
std::optional<int64_t> opt_int(const nlohmann::json& obj, const std::string& key, const std::string& source,
                               const std::string& path = "");
std::optional<double> opt_number(const nlohmann::json& obj, const std::string& key, const std::string& source,
                                 const std::string& path = "");
std::optional<bool> opt_bool(const nlohmann::json& obj, const std::string& key, const std::string& source,
                             const std::string& path = "");
std::optional<std::string> opt_string(const nlohmann::json& obj, const std::string& key,
                                      const std::string& source, const std::string& path = "");
/// A token id field that may be a number or a list of numbers (eos_token_id); empty when absent.
std::vector<int64_t> int_or_list(const nlohmann::json& obj, const std::string& key, const std::string& source);

/// lg::Error "<source>: field '<field>' must be <want>, got <type> <value>": a field present with
/// another type than the one read.
[[noreturn]] void wrong_type(const std::string& source, const std::string& field, std::string_view want,
                             const nlohmann::json& got);

/// lg::Error "<source>: field '<field>' is <value>, out of the 64-bit integers' range": an integer
/// past int64 (JSON reads it as unsigned up to 2^64, as a float beyond), not a wrong type.
[[noreturn]] void out_of_int64_range(const std::string& source, const std::string& field, const nlohmann::json& got);

/// Required reads: lg::Error "<source>: missing required field '<key>'" only when absent (or null),
/// and wrong_type's message when present with another type: a field that is there is never
/// reported missing.
int64_t req_int(const nlohmann::json& obj, const std::string& key, const std::string& source);
double req_number(const nlohmann::json& obj, const std::string& key, const std::string& source);
std::string req_string(const nlohmann::json& obj, const std::string& key, const std::string& source);
/// An object field; `want` says what it maps ("an object of tensor name -> shard file").
const nlohmann::json& req_object(const nlohmann::json& obj, const std::string& key, const std::string& source,
                                 std::string_view want = "an object");

}  // namespace lg::model::json_fields
