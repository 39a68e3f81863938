#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

#include "support/json_file.h"
#include "tokenizer/json_fields.h"

namespace lg::tokenizer {
namespace {

std::vector<int32_t> id_list(const nlohmann::json& ids, const JsonFields& fields, const std::string& field) {
  if (!ids.is_array()) fields.fail(field, "expected an array of ids");
  std::vector<int32_t> out;
  for (const auto& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fields.fail(field, "expected ids in [0, 2^31), got " + id.dump());
    out.push_back(id.get<int32_t>());
  }
  return out;
}

// TemplateProcessing's "single": [{"SpecialToken": {"id": NAME}} | {"Sequence": {"id": "A"}}, ...].
SpecialTokens from_template(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  const nlohmann::json& single = fields.require(j, "single", field + ".single");
  if (!single.is_array()) fields.fail(field + ".single", "expected an array");
  const nlohmann::json& specials = fields.require(j, "special_tokens", field + ".special_tokens");
  SpecialTokens out;
  int sequences = 0;
  for (size_t k = 0; k < single.size(); ++k) {
    const std::string f = field + ".single[" + std::to_string(k) + "]";
    const nlohmann::json& piece = single[k];
    if (piece.is_object() && piece.contains("Sequence")) {
      const nlohmann::json& id = fields.require(piece["Sequence"], "id", f + ".Sequence.id");
      if (id != "A") fields.fail(f + ".Sequence.id", "expected \"A\" in the single template, got " + id.dump());
      ++sequences;
    } else if (piece.is_object() && piece.contains("SpecialToken")) {
      const std::string name = fields.string(piece["SpecialToken"], "id", f + ".SpecialToken");
      if (!specials.is_object() || !specials.contains(name))
        fields.fail(f + ".SpecialToken.id", "\"" + name + "\" is not in " + field + ".special_tokens");
      const std::string sf = field + ".special_tokens[\"" + name + "\"]";
      const auto ids = id_list(fields.require(specials[name], "ids", sf + ".ids"), fields, sf + ".ids");
      auto& dst = sequences == 0 ? out.prefix : out.suffix;
      dst.insert(dst.end(), ids.begin(), ids.end());
    } else {
      fields.fail(f, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}, got " + piece.dump());
    }
  }
  if (sequences != 1) fields.fail(field + ".single", "expected the sequence $A exactly once");
  return out;
}

// RobertaProcessing / BertProcessing: "cls": [token, id], "sep": [token, id] -> cls $A sep.
int32_t pair_id(const nlohmann::json& j, const char* key, const JsonFields& fields, const std::string& field) {
  const nlohmann::json& v = fields.require(j, key, field + "." + key);
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer() || v[1].get<int64_t>() < 0 ||
      v[1].get<int64_t>() > INT32_MAX)
    fields.fail(field + "." + key, "expected [token, id], got " + v.dump());
  return v[1].get<int32_t>();
}

SpecialTokens read_processor(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  const std::string type = fields.type_of(j, field);
  if (type == "ByteLevel") return {};  // offsets only
  if (type == "TemplateProcessing") return from_template(j, fields, field);
  if (type == "RobertaProcessing" || type == "BertProcessing")
    return {{pair_id(j, "cls", fields, field)}, {pair_id(j, "sep", fields, field)}};
  if (type == "Sequence") {
    const nlohmann::json& list = fields.require(j, "processors", field + ".processors");
    if (!list.is_array()) fields.fail(field + ".processors", "expected an array");
    // Each processor wraps the output of the one before.
    SpecialTokens out;
    for (size_t k = 0; k < list.size(); ++k) {
      SpecialTokens inner = read_processor(list[k], fields, field + ".processors[" + std::to_string(k) + "]");
      inner.prefix.insert(inner.prefix.end(), out.prefix.begin(), out.prefix.end());
      out.suffix.insert(out.suffix.end(), inner.suffix.begin(), inner.suffix.end());
      out.prefix = std::move(inner.prefix);
    }
    return out;
  }
  fields.fail(field + ".type", "unsupported post-processor \"" + type +
                                   "\" (lanegraph supports TemplateProcessing, ByteLevel, RobertaProcessing, "
                                   "BertProcessing, Sequence)");
}

// A special token of tokenizer_config.json: "<s>", null, or {"content": "<s>", ...}.
std::optional<std::string> special_token(const nlohmann::json& j, const char* key, const JsonFields& fields) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const nlohmann::json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  fields.fail(key, "expected a string, null or {\"content\": ...}, got " + v.dump());
}

}  // namespace

SpecialTokens SpecialTokens::from_post_processor(const nlohmann::json& j, const JsonFields& fields) {
  if (j.is_null()) return {};
  return read_processor(j, fields, "post_processor");
}

TokenizerConfig TokenizerConfig::read(const std::filesystem::path& file) {
  const JsonFields fields(file.string());
  const nlohmann::json j = read_json_file(file);
  if (!j.is_object()) throw Error(file.string() + ": expected a JSON object at the top");
  TokenizerConfig c;
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    if (!j.contains(key)) continue;
    // transformers reads a null flag as false.
    if (!j[key].is_null() && !j[key].is_boolean()) fields.fail(key, "expected true or false, got " + j[key].dump());
    const bool v = j[key].is_boolean() && j[key].get<bool>();
    (std::string(key) == "add_bos_token" ? c.add_bos_token : c.add_eos_token) = v;
  }
  c.bos_token = special_token(j, "bos_token", fields);
  c.eos_token = special_token(j, "eos_token", fields);
  return c;
}

}  // namespace lg::tokenizer
