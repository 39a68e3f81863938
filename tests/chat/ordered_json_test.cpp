// parse_ordered_json reads JSON as Python's json.loads does (key order kept; a repeated key keeps
// its first position and its last value) in linear time, where nlohmann's ordered_json parse is
// quadratic in an object's key count.
#include "chat/ordered_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace lg::chat {
namespace {

using json = nlohmann::ordered_json;
using namespace std::string_literals;

TEST(OrderedJson, KeepsKeyOrderAndPythonsRuleForRepeatedKeys) {
  const json j = parse_ordered_json(R"({"z": 1, "a": [true, null, {"y": "s", "b": 2.5}], "m": {}, "z": 3})");
  EXPECT_EQ(j.dump(), R"({"z":3,"a":[true,null,{"y":"s","b":2.5}],"m":{}})");  // json.dumps(json.loads(...)), no spaces
  EXPECT_EQ(parse_ordered_json("[]").dump(), "[]");
  EXPECT_EQ(parse_ordered_json(" \"x\" ").dump(), "\"x\"");
  EXPECT_EQ(parse_ordered_json("-12").get<int>(), -12);
  EXPECT_EQ(j, json::parse(R"({"z": 3, "a": [true, null, {"y": "s", "b": 2.5}], "m": {}})"));
}

TEST(OrderedJson, MalformedJsonThrowsNlohmannsParseError) {
  EXPECT_THROW(parse_ordered_json("{\"a\": "), json::parse_error);
  EXPECT_THROW(parse_ordered_json("[1, 2"), json::parse_error);
  EXPECT_THROW(parse_ordered_json("\"\xff\""), json::parse_error);
  EXPECT_THROW(parse_ordered_json("{} x"), json::parse_error);
  EXPECT_THROW(parse_ordered_json("[1e400]"), json::out_of_range);
  // nlohmann's lexer ends its input at a NUL byte: what follows one was dropped unread.
  for (const std::string& text : {"{\"a\": 1}\0{\"b\": 2}"s, "{\"a\": 1}\0"s,
                                 "[1,\0 2]"s}) {
    try {
      parse_ordered_json(text);
      ADD_FAILURE() << "parsed: " << text;
    } catch (const json::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("a NUL byte"), std::string::npos) << e.what();
    }
  }
}

TEST(OrderedJson, ManyKeysAndDeepNestingInLinearTime) {
  // 300,000 keys in one object (~4 MiB, lg serve's body limit): nlohmann's ordered parse needs
  // minutes for this (quadratic: 6 s for 50,000 keys here, so ~200 s); this parse well under a
  // second, and the bound leaves room for a loaded machine.
  std::string s = "{";
  for (int i = 0; i < 300000; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  s += "}";
  const auto t0 = std::chrono::steady_clock::now();
  const json j = parse_ordered_json(s);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  ASSERT_EQ(j.size(), 300000u);
  EXPECT_EQ(j.begin().key(), "k0");
  EXPECT_EQ(j["k299999"], 299999);
  // 200,000 levels of nesting: no recursion in the parse (nor in nlohmann's destruction).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_TRUE(parse_ordered_json(deep).is_array());
}

TEST(OrderedJson, AMaxDepthIsCheckedWhileParsing) {
  EXPECT_EQ(parse_ordered_json(R"({"a": [1]})", 2).dump(), R"({"a":[1]})");
  EXPECT_EQ(parse_ordered_json("7", 0).get<int>(), 7);
  EXPECT_THROW(parse_ordered_json(R"({"a": [[1]]})", 2), JsonTooDeep);
  EXPECT_THROW(parse_ordered_json("[]", 0), JsonTooDeep);
  // Found at the first level past the bound, before the rest is read (or built).
  EXPECT_THROW(parse_ordered_json(std::string(200000, '[') + "1", 64), JsonTooDeep);
}

}  // namespace
}  // namespace lg::chat
