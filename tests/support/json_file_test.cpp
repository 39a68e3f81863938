// json_error_text: the message every malformed JSON file, header, request body and batch line is
// reported with.
#include <gtest/gtest.h>

#include <string>

#include "support/error.h"
#include "support/json_file.h"

namespace {

std::string parse_error(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    ADD_FAILURE() << "parsed: " << j.dump();
  } catch (const nlohmann::json::exception& e) {
    return lg::json_error_text(e);
  }
  return {};
}

TEST(JsonErrorText, ShortTokensAreQuotedWhole) {
  EXPECT_EQ(parse_error(R"({"a": tru})"),
            "parse error at line 1, column 10: syntax error while parsing value - invalid literal; last read: '\"a\": tru}'");
  EXPECT_EQ(parse_error(R"({"a": 1)"),
            "parse error at line 1, column 8: syntax error while parsing object - unexpected end of input; expected "
            "'}'");
}

TEST(JsonErrorText, ALongTokenKeepsOnlyItsTail) {
  // An unterminated string of 4 MiB: the message quoted all of it (a 4 MiB 400 from lg serve).
  const std::string m = parse_error("{\"prompt\": \"" + std::string(4 << 20, 'a') + "z");
  EXPECT_LT(m.size(), 300u) << m.substr(0, 300);
  EXPECT_EQ(m.rfind("parse error at line 1, column 4194318: syntax error while parsing value - invalid string: "
                    "missing closing quote; last read: '...aaa",
                    0),
            0u)
      << m.substr(0, 300);
  EXPECT_EQ(m.substr(m.size() - 3), "az'") << m;
  // Followed by what was expected, the tail is kept the same way.
  const std::string key = parse_error("{\"" + std::string(1000, 'k'));
  EXPECT_LT(key.size(), 300u) << key.substr(0, 300);
  EXPECT_NE(key.find("kkk'; expected string literal"), std::string::npos) << key;
  // The cut never starts inside a UTF-8 character.
  const std::string wide = parse_error("[\"" + [] {
    std::string s;
    for (int i = 0; i < 500; ++i) s += "\xc3\xa9";
    return s;
  }());
  const size_t dots = wide.find("'...");
  ASSERT_NE(dots, std::string::npos) << wide;
  EXPECT_EQ(wide.substr(dots + 4, 2), "\xc3\xa9") << wide;
}

}  // namespace

namespace {

// A binary file read as JSON (a config.json of NUL bytes): nlohmann stops at the NUL and called it
// "unexpected end of input"; the message now says what the file holds.
TEST(JsonFile, ANulByteIsNamedAsSuch) {
  try {
    lg::parse_json_text(std::string("{\"a\": 1\0\0\0}", 11), "config.json");
    ADD_FAILURE() << "parsed";
  } catch (const lg::Error& e) {
    EXPECT_EQ(std::string(e.what()), "config.json: malformed JSON: a NUL byte at offset 7 (not a text file)");
  }
  EXPECT_EQ(lg::parse_json_text("{\"a\": \"\\u0000\"}", "x.json")["a"], std::string(1, '\0'));  // escaped: text
}

}  // namespace
