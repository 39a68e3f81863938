// Which configs the hand-written lane takes and which it refuses (no GPU needed), and the RoPE
// frequencies against transformers' formula.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lanes/factory.h"
#include "lanes/qwen/qwen_shape.h"
#include "model/config.h"
#include "support/error.h"

using namespace lg;
using namespace lg::qwen;

namespace {

nlohmann::json qwen3_json() {
  return nlohmann::json{{"model_type", "qwen3"},        {"vocab_size", 512},          {"hidden_size", 64},
                        {"intermediate_size", 192},     {"num_hidden_layers", 2},     {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},     {"head_dim", 32},             {"rms_norm_eps", 1e-6},
                        {"rope_theta", 1e6},            {"max_position_embeddings", 1024},
                        {"tie_word_embeddings", true}};
}

std::string refusal(const nlohmann::json& j) {
  try {
    qwen_shape_from_config(model::parse_config(j, "cfg.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(QwenShape, AcceptsQwen3AndQwen2) {
  QwenShape s = qwen_shape_from_config(model::parse_config(qwen3_json(), "cfg.json"));
  EXPECT_EQ(s.family, "qwen3");
  EXPECT_TRUE(s.qk_norm);
  EXPECT_FALSE(s.qkv_bias);
  EXPECT_TRUE(s.tied);
  auto j = qwen3_json();
  j["model_type"] = "qwen2";
  j.erase("head_dim");
  j["hidden_size"] = 128;  // head_dim = 128 / 4 = 32
  QwenShape q2 = qwen_shape_from_config(model::parse_config(j, "cfg.json"));
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.qk_norm);
  EXPECT_EQ(q2.head_dim, 32);
}

TEST(QwenShape, RefusesWhatTheTemplatesDoNotCover) {
  auto j = qwen3_json();
  j["head_dim"] = 96;
  EXPECT_NE(refusal(j).find("head_dim 96"), std::string::npos) << refusal(j);
  EXPECT_NE(refusal(j).find("cfg.json"), std::string::npos);
  j = qwen3_json();
  j["num_attention_heads"] = 32;
  j["num_key_value_heads"] = 2;
  EXPECT_NE(refusal(j).find("GQA ratio 16"), std::string::npos) << refusal(j);
  j = qwen3_json();
  j["model_type"] = "llama";
  EXPECT_NE(refusal(j).find("model_type"), std::string::npos) << refusal(j);
  j = qwen3_json();
  j["intermediate_size"] = 100;
  EXPECT_NE(refusal(j).find("intermediate_size 100"), std::string::npos) << refusal(j);
  j = qwen3_json();
  j["attention_bias"] = true;  // Qwen3 puts it on o_proj too
  EXPECT_NE(refusal(j).find("o_proj"), std::string::npos) << refusal(j);
}

// lg bench and lg serve --shape without --lane: the hand-written lane where its templates take the
// config, the compiled lane for everything else (bench/shapes/qwen3-30b-a3b among them, which the
// README runs on the compiled lane), so that a shape never defaults to a lane that refuses it.
TEST(QwenShape, DefaultGpuLaneIsTheOneThatTakesTheConfig) {
  const auto lane_of = [](const nlohmann::json& j) { return default_gpu_lane(model::parse_config(j, "cfg.json")); };
  EXPECT_EQ(lane_of(qwen3_json()), "handwritten");
  auto j = qwen3_json();
  j["model_type"] = "qwen2";
  EXPECT_EQ(lane_of(j), "handwritten");
  j = qwen3_json();
  j["head_dim"] = 96;  // a Qwen3 outside the templates (RefusesWhatTheTemplatesDoNotCover)
  EXPECT_EQ(lane_of(j), "compiled");
  j = qwen3_json();
  j["model_type"] = "llama";
  EXPECT_EQ(lane_of(j), "compiled");
  const auto moe = model::load_config(std::string(LG_SOURCE_DIR) + "/bench/shapes/qwen3-30b-a3b/config.json");
  EXPECT_EQ(default_gpu_lane(moe), "compiled");
}

TEST(QwenShape, RopeInverseFrequenciesFollowTransformers) {
  auto f = rope_inv_freq(128, 1e6);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], 1.0f);
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_NEAR(f[i], 1.0 / std::pow(1e6, 2.0 * i / 128.0), 2e-7 * (1.0 / std::pow(1e6, 2.0 * i / 128.0)) + 1e-12);
}

