// The custom_id of an `lg batch` line that strict parsing refused, so that its error line still
// names the request it answers: a number past double (1e400) anywhere in the body, a line cut
// short, or nesting past the parser's limit otherwise cost the user the only key that ties the
// error to their request.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lg::cli {

namespace detail {

// Reads the top-level "custom_id" string as the SAX events go by, and stops at the first error,
// keeping where a number overflowed so that the caller can neutralise it and read on.
class CustomIdScan : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> custom_id;
  std::optional<std::pair<size_t, std::string>> overflow;  // position after the token, the token

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && expecting_) custom_id = s;  // the last one wins, as in nlohmann's own parse
    return value();
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) object_ = true;
    value();
    ++depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    ++depth_;
    return true;
  }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    expecting_ = object_ && depth_ == 1 && k == "custom_id";
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) override {
    if (e.id == 406) overflow = {position, token};  // out_of_range: "number overflow parsing '1e400'"
    return false;
  }

 private:
  bool value() {
    expecting_ = false;
    return true;
  }
  size_t depth_ = 0;
  bool object_ = false, expecting_ = false;
};

}  // namespace detail

/// The string value of `line`'s top-level "custom_id" key, read leniently: numbers too large for a
/// double are read as 0, and a syntax error ends the reading (a custom_id before it still counts).
/// nullopt when the line is not an object or names no string custom_id before it breaks.
inline std::optional<std::string> recover_custom_id(std::string line) {
  std::optional<std::string> found;
  // Each pass gets past one overflowing number; bounded so that a line of thousands costs little.
  for (int pass = 0; pass < 64; ++pass) {
    detail::CustomIdScan scan;
    nlohmann::json::sax_parse(line, &scan);
    if (scan.custom_id) found = scan.custom_id;
    if (!scan.overflow) break;
    const auto& [end, token] = *scan.overflow;
    const size_t at = line.rfind(token, end);
    if (token.empty() || at == std::string::npos) break;
    line.replace(at, token.size(), "0");
  }
  return found;
}

}  // namespace lg::cli
