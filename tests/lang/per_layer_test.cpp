// Per-layer compile-time values and attention's window/softcap/scale arguments: config arrays
// indexed by the layer, layer-index arithmetic, `require` in a layer body, int(), and what
// models/gemma3_text.lg and models/mistral.lg make of them on their fixtures' configs (which
// layers get a sliding window, and the scale).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "lang/lower.h"
#include "lang_test_paths.h"
#include "support/error.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::kSource;
using lg::lang_test::load_json;
using lg::lang_test::tiny_qwen3_config;

struct Attn {
  int64_t window;
  double softcap, scale;
  bool operator==(const Attn&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Attn& a) {
  return os << "{window " << a.window << ", softcap " << a.softcap << ", scale " << a.scale << "}";
}

/// The attention nodes of a graph, in layer order.
std::vector<Attn> attentions(const lg::ir::Graph& g) {
  std::vector<Attn> out;
  for (const auto& n : g.nodes)
    if (n.op == lg::ir::Op::Attention) out.push_back({n.attrs.window, n.attrs.softcap, n.attrs.scale});
  return out;
}

std::vector<int64_t> windows(const lg::ir::Graph& g) {
  std::vector<int64_t> out;
  for (const Attn& a : attentions(g)) out.push_back(a.window);
  return out;
}

lg::ir::Graph gemma3(const nlohmann::json& config) {
  return lg::lang::lower_file(kSource + "/models/gemma3_text.lg", config, {.max_seq = 64});
}

// A three-layer program; `attention_args` may make its layers differ by compile-time values of the
// layer index.
std::string per_layer_program(const std::string& attention_args) {
  return "model m {\n"
         "  dims { D = config.hidden_size; V = config.vocab_size; H = config.num_attention_heads }\n"
         "  param e: f32[V, D] = \"model.embed_tokens.weight\"\n"
         "  layers l in 0..3 {\n    param n: f32[D] = \"model.layers.{l}.norm\"\n  }\n"
         "  state k: f32[3, 4, S, 16]\n"
         "  forward(t: i32[T], pos: i32[T]) -> f32[T, D] {\n"
         "    x = e[t]\n"
         "    for l in layers {\n"
         "      kind = config.layer_types[l]\n"
         "      require kind == \"full_attention\" || kind == \"sliding_attention\", \"bad kind\"\n"
         "      q = x.view(T, 4, 16)\n"
         "      k[l, :, pos, :] = q.transpose(0, 1)\n"
         "      x = x + attention(q, k[l], k[l], pos" + attention_args + ").view(T, D) * l.n\n"
         "    }\n"
         "    return x\n"
         "  }\n"
         "}\n";
}


TEST(PerLayer, ConfigArraysLayerArithmeticAndAttentionArguments) {
  // tiny-qwen3: layer_types is 3 x "full_attention", rms_norm_eps 1e-6 -> int(4.0) = 4.
  auto out = lg::lang::check_source(
      "m.lg", per_layer_program(", window=(l + 1) % 2 == 0 ? int(config.rms_norm_eps * 4.0e6) : none, softcap=30.0, scale=0.5"),
      tiny_qwen3_config(), {});
  ASSERT_TRUE(out.ok) << out.rendered;
  EXPECT_EQ(attentions(out.report.graph), (std::vector<Attn>{{0, 30.0, 0.5}, {4, 30.0, 0.5}, {0, 30.0, 0.5}}));
  out = lg::lang::check_source("m.lg", per_layer_program(""), tiny_qwen3_config(), {});
  ASSERT_TRUE(out.ok) << out.rendered;
  EXPECT_EQ(attentions(out.report.graph), (std::vector<Attn>(3, Attn{0, 0.0, 0.25})));  // 16 ** -0.5
}

void expect_error(const nlohmann::json& config, const std::string& args, int line, const std::string& message) {
  SCOPED_TRACE(args);
  auto out = lg::lang::check_source("m.lg", per_layer_program(args), config, {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, line) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message, message) << out.rendered;
}

TEST(PerLayer, BadArgumentsAndValuesAreErrorsAtTheirLine) {
  const auto config = tiny_qwen3_config();
  expect_error(config, ", window=0", 15, "window must be a positive compile-time integer or none, found int 0");
  expect_error(config, ", window=2.5", 15, "window must be a positive compile-time integer or none, found float 2.5");
  expect_error(config, ", softcap=-1.0", 15, "softcap must be a positive compile-time number or none, found float -1");
  expect_error(config, ", scale=0.0", 15, "scale must be positive, found 0");
  expect_error(config, ", causal=true", 15, "attention has no argument 'causal'");
  auto bad = config;
  bad["layer_types"][1] = "chunked_attention";
  expect_error(bad, "", 12, "requirement failed in layer 1: bad kind");
  bad["layer_types"] = {"full_attention"};
  expect_error(bad, "", 11, "index 1 is out of range for config key 'layer_types' of 1 entries");
  bad.erase("layer_types");
  expect_error(bad, "", 11, "config key 'layer_types' is missing in config.json and has no default (write `config.layer_types ?? <default>`)");
  bad["rms_norm_eps"] = "small";
  bad["layer_types"] = config["layer_types"];
  expect_error(bad, ", window=int(config.rms_norm_eps * 4.0e6)", 15,
               "operator '*' cannot combine string \"small\" (config.rms_norm_eps) and float 4000000");
}

TEST(PerLayer, ConfigArraysAreIndexedNotBound) {
  const std::string text =
      "model m {\n  dims { D = config.hidden_size }\n  const a = config.layer_types\n"
      "  forward(t: i32[T]) -> i32[T] {\n    return t\n  }\n}\n";
  auto out = lg::lang::check_source("m.lg", text, tiny_qwen3_config(), {});
  ASSERT_FALSE(out.ok);
  EXPECT_EQ(out.diagnostics[0].message, "const 'a' must be a number, bool or string, found a config array");
}

TEST(PerLayer, Gemma3LocalLayersFromLayerTypes) {
  const auto config = load_json(kShared + "/fixtures/tiny-gemma3/config.json");
  // layer_types: sliding, full, sliding, full; sliding_window 8; query_pre_attn_scalar 16.
  EXPECT_EQ(attentions(gemma3(config)), (std::vector<Attn>{{8, 0, 0.25}, {0, 0, 0.25}, {8, 0, 0.25}, {0, 0, 0.25}}));
}

TEST(PerLayer, Gemma3LocalLayersFromThePatternWithoutLayerTypes) {
  auto config = load_json(kShared + "/fixtures/tiny-gemma3/config.json");
  config.erase("layer_types");
  config.erase("_sliding_window_pattern");
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{8, 8, 8, 8}));  // default 6: layer 5 is the first global
  config["sliding_window_pattern"] = 3;
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{8, 8, 0, 8}));
  config["sliding_window_pattern"] = 2;
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{8, 0, 8, 0}));
}

TEST(PerLayer, Gemma3RefusesWhatItDoesNotImplement) {
  const auto base = load_json(kShared + "/fixtures/tiny-gemma3/config.json");
  auto refused = [&](const char* key, const nlohmann::json& value, const std::string& says) {
    SCOPED_TRACE(key);
    auto config = base;
    config[key] = value;
    try {
      gemma3(config);
      ADD_FAILURE() << "accepted";
    } catch (const lg::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("attn_logit_softcapping", 50.0, "attn_logit_softcapping is set");
  refused("hidden_activation", "gelu", "gelu_pytorch_tanh only");
  refused("use_bidirectional_attention", true, "causal attention only");
  refused("model_type", "gemma3", "model_type \"gemma3_text\"");
  refused("rope_parameters", {{"rope_theta", 10000.0}, {"rope_type", "default"}}, "not one per layer type");
  refused("layer_types", {"sliding_attention", "global", "sliding_attention", "full_attention"},
          "requirement failed in layer 1: config.layer_types entries must be");
  // Linear RoPE reads its factor without a default (modeling_rope_utils); 1.0 was made up for it.
  refused("rope_parameters",
          {{"full_attention", {{"rope_type", "linear"}, {"rope_theta", 1000000.0}}},
           {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}},
          "requirement failed: gemma3_text.lg: linear RoPE needs its factor");
}

TEST(PerLayer, MistralSlidingWindowIsTheAttentionWindow) {
  auto config = load_json(kShared + "/fixtures/tiny-mistral/config.json");
  ASSERT_TRUE(config["sliding_window"].is_null());
  auto lower = [&] { return lg::lang::lower_file(kSource + "/models/mistral.lg", config, {.max_seq = 64}); };
  EXPECT_EQ(windows(lower()), (std::vector<int64_t>{0, 0, 0}));
  config["sliding_window"] = 8;
  EXPECT_EQ(windows(lower()), (std::vector<int64_t>{8, 8, 8}));
  config["sliding_window"] = 0;
  EXPECT_THROW(lower(), lg::Error);
}

// MistralConfig gives an absent key and a null one different meanings: sliding_window absent is
// 4096 (Mistral 7B v0.1), null no window; num_key_value_heads absent is 8, and null fails its
// strict validation (typed `int` in transformers 5.17), so mistral.lg refuses it, naming the field,
// where it read a null as the query heads. `config.sliding_window ?? none` ran full attention for
// an absent key; has() tells them apart.
TEST(PerLayer, MistralTellsAnAbsentConfigKeyFromANullOne) {
  auto config = load_json(kShared + "/fixtures/tiny-mistral/config.json");
  auto lower = [&] { return lg::lang::lower_file(kSource + "/models/mistral.lg", config, {.max_seq = 64}); };
  config.erase("sliding_window");
  EXPECT_EQ(windows(lower()), (std::vector<int64_t>{4096, 4096, 4096}));
  config["sliding_window"] = nullptr;
  EXPECT_EQ(windows(lower()), (std::vector<int64_t>{0, 0, 0}));
  config["sliding_window"] = 16;
  EXPECT_EQ(windows(lower()), (std::vector<int64_t>{16, 16, 16}));
  // KV heads: the state kcache is [L, KV, S, Dh]. 16 query heads, so that 8 divides them.
  config["num_attention_heads"] = 16;
  auto kv_heads = [&] { return lower().states.at(0).shape.at(1).coeff; };
  EXPECT_EQ(kv_heads(), 2);
  config.erase("num_key_value_heads");
  EXPECT_EQ(kv_heads(), 8);
  config["num_key_value_heads"] = nullptr;
  try {
    kv_heads();
    ADD_FAILURE() << "a null num_key_value_heads was accepted";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mistral.lg: config.json's num_key_value_heads is null; MistralConfig "
                                         "requires an integer there"),
              std::string::npos)
        << e.what();
  }
}

// Gemma3TextConfig: sliding_window absent is 4096; null leaves the local layers no window, which
// transformers' create_sliding_window_causal_mask refuses. gemma3_text.lg took null for 4096.
TEST(PerLayer, Gemma3SlidingWindowAbsentIsTheDefaultAndNullIsRefused) {
  auto config = load_json(kShared + "/fixtures/tiny-gemma3/config.json");
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{8, 0, 8, 0}));
  config.erase("sliding_window");
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{4096, 0, 4096, 0}));
  config["sliding_window"] = nullptr;
  try {
    gemma3(config);
    ADD_FAILURE() << "a null sliding_window was accepted";
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("requirement failed in layer 0: gemma3_text.lg: config.sliding_window is null"),
              std::string::npos)
        << e.what();
  }
  // Without local layers a null window is never read.
  config["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention"};
  EXPECT_EQ(windows(gemma3(config)), (std::vector<int64_t>{0, 0, 0, 0}));
}

// Gemma3TextConfig (transformers 5.17) types num_key_value_heads, head_dim and
// query_pre_attn_scalar `int` with defaults 4, 256 and 256: an absent key is the default, an
// explicit null fails its strict validation. gemma3_text.lg took a null for the default.
TEST(PerLayer, Gemma3AbsentDimsAreTheConfigDefaultsAndANullOneIsRefused) {
  const auto base = load_json(kShared + "/fixtures/tiny-gemma3/config.json");
  auto kcache = [](const lg::ir::Graph& g) {  // [L, KV, S, Dh]
    const auto& s = g.states.at(0).shape;
    return std::pair{s.at(1).coeff, s.at(3).coeff};
  };
  auto config = base;
  config["num_attention_heads"] = 8;
  config.erase("num_key_value_heads");
  EXPECT_EQ(kcache(gemma3(config)).first, 4);
  config = base;
  config.erase("head_dim");
  EXPECT_EQ(kcache(gemma3(config)).second, 256);
  config = base;
  config.erase("query_pre_attn_scalar");
  EXPECT_EQ(attentions(gemma3(config)).at(0).scale, 1.0 / 16);  // 256 ** -0.5
  for (const char* field : {"num_key_value_heads", "head_dim", "query_pre_attn_scalar"}) {
    SCOPED_TRACE(field);
    config = base;
    config[field] = nullptr;
    try {
      gemma3(config);
      ADD_FAILURE() << "a null " << field << " was accepted";
    } catch (const lg::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("gemma3_text.lg: config.json's ") + field + " is null"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
