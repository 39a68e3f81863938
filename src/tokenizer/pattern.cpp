#include "tokenizer/pattern.h"

#include <nlohmann/json.hpp>

#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {

Pattern Pattern::from_json(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  if (!j.is_object() || j.size() != 1 || !(j.contains("String") || j.contains("Regex")) ||
      !j.begin().value().is_string())
    fields.fail(field, "expected {\"String\": \"...\"} or {\"Regex\": \"...\"}, got " + j.dump());
  const std::string text = j.begin().value().get<std::string>();
  if (utf8::first_invalid(text) != std::string::npos) fields.fail(field, "not valid UTF-8");
  if (j.contains("String")) {
    if (text.empty()) fields.fail(field + ".String", "an empty pattern is not supported");
    return literal(text);
  }
  Pattern p;
  p.literal_ = text;
  p.regex_ = std::make_shared<const SplitRegex>(text, fields.file() + ": " + field + ".Regex");
  return p;
}

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

void Pattern::find_matches(std::string_view text, std::vector<PatternMatch>& out) const {
  find_matches(text, [&](const PatternMatch& m) { out.push_back(m); });
}

void Pattern::find_matches(std::string_view text, const std::function<void(const PatternMatch&)>& out) const {
  if (regex_) {
    regex_->find_matches(text, out);
    return;
  }
  size_t emitted = 0;
  for (size_t at = text.find(literal_); at != std::string_view::npos; at = text.find(literal_, emitted)) {
    if (at > emitted) out({emitted, at, false});
    out({at, at + literal_.size(), true});
    emitted = at + literal_.size();
  }
  if (emitted < text.size()) out({emitted, text.size(), false});
}

}  // namespace lg::tokenizer
