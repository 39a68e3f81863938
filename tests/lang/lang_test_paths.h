// What the language tests share: the source tree (models/*.lg) and ../shared (fixture configs),
// and reading a JSON file from them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace lg::lang_test {

inline const std::string kSource = LG_SOURCE_DIR;
inline const std::string kShared = LG_SHARED_DIR;

/// The JSON document at `path`; a missing file fails the test (and the parse throws).
inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

/// tiny-qwen3's config.json, the config most language tests check programs against.
inline nlohmann::json tiny_qwen3_config() { return load_json(kShared + "/fixtures/tiny-qwen3/config.json"); }

}  // namespace lg::lang_test
