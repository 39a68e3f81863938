// Reading config.json: has(config.key) (present, null included, vs absent), a path step that is
// not an object (an error, not an absent key), the programs' refusals of configs that lack what
// transformers reads without a default (llama.lg's scaled RoPEs), and errors naming the config key
// of the value they are about.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lang/lower.h"
#include "lang_test_paths.h"
#include "support/error.h"

namespace {

using lg::lang_test::kShared;
using lg::lang_test::kSource;
using lg::lang_test::load_json;
using lg::lang_test::tiny_qwen3_config;


/// A model of the consts `decls` and a forward that returns its input.
std::string program(const std::string& decls) {
  return "model m {\n" + decls + "  forward(t: i32[T]) -> i32[T] {\n    return t\n  }\n}\n";
}

/// The consts `lg check` reports, "name = value" each.
std::vector<std::string> consts(const lg::lang::CheckOutcome& out) {
  std::vector<std::string> r;
  for (const auto& c : out.report.consts) r.push_back(c.name + " = " + c.value);
  return r;
}

TEST(ConfigKeys, HasTellsAPresentKeyNullIncludedFromAnAbsentOne) {
  auto config = tiny_qwen3_config();
  config["rope_scaling"] = nullptr;
  // bos_token_id is null in tiny-qwen3's config; rope_scaling null holds no keys.
  const auto out = lg::lang::check_source("m.lg",
                                          program("  const a = has(config.hidden_size)\n"
                                                  "  const b = has(config.bos_token_id)\n"
                                                  "  const c = has(config.nope)\n"
                                                  "  const d = has(config.rope_parameters.rope_theta)\n"
                                                  "  const e = has(config.rope_parameters.factor)\n"
                                                  "  const f = has(config.rope_scaling)\n"
                                                  "  const g = has(config.rope_scaling.factor)\n"
                                                  "  const h = has(config.nope.deeper)\n"
                                                  "  const k = has(config.sliding_window) ? config.sliding_window ?? none : 4096\n"
                                                  "  const n = has(config.nope) ? config.nope ?? none : 4096\n"),
                                          config, {});
  ASSERT_TRUE(out.ok) << out.rendered;
  EXPECT_EQ(consts(out), (std::vector<std::string>{"a = true", "b = true", "c = false", "d = true", "e = false", "f = true",
                                                   "g = false", "h = false", "k = none", "n = 4096"}));
}

// A string const is listed on one line, escaped: it was printed raw, so a "\n" in it broke
// `lg check`'s consts list across lines (docs pass).
TEST(ConfigKeys, StringConstsAreListedEscapedOnOneLine) {
  const auto out = lg::lang::check_source(
      "m.lg", program("  const s = \"a\\\"b\\\\c\\n\\t\u202e\"\n"), tiny_qwen3_config(), {});
  ASSERT_TRUE(out.ok) << out.rendered;
  EXPECT_EQ(consts(out), (std::vector<std::string>{"s = \"a\\\"b\\\\c\\n\\t\\u{202E}\""}));
}

void expect_one_error(const std::string& text, const nlohmann::json& config, int line, int col, const std::string& message) {
  SCOPED_TRACE(text);
  const auto out = lg::lang::check_source("m.lg", text, config, {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.line, line) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].span.col, col) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message, message) << out.rendered;
}

TEST(ConfigKeys, HasTakesExactlyOneConfigKey) {
  const auto config = tiny_qwen3_config();
  expect_one_error(program("  const a = has(1)\n"), config, 2, 17, "has's argument must be a config key (config.key)");
  expect_one_error(program("  const a = has(config.layer_types[0])\n"), config, 2, 17,
                   "has's argument must be a config key (config.key)");
  expect_one_error(program("  const a = has(config.a, config.b)\n"), config, 2, 13, "has takes one config key: has(config.key)");
  expect_one_error(program("  const a = has()\n"), config, 2, 13, "has takes one config key: has(config.key)");
  expect_one_error(program("  const a = has(key=config.a)\n"), config, 2, 13, "has takes one config key: has(config.key)");
  // A bool, not a value to compute with.
  expect_one_error(program("  const a = has(config.hidden_size) + 1\n"), config, 2, 13,
                   "operator '+' cannot combine bool true and int 1");
}

// `"rope_parameters": "x"` was taken for an absent object under `??`, so llama.lg ran the default
// RoPE of a config it could not read. A step that exists but is not an object is an error naming
// the key and its type, once per key however often the program reads under it.
TEST(ConfigKeys, AStepThatIsNotAnObjectIsAnErrorNotAnAbsentKey) {
  auto config = tiny_qwen3_config();
  config["rope_parameters"] = "x";
  expect_one_error(program("  const a = config.rope_parameters.rope_theta ?? 1.0\n"
                           "  const b = config.rope_parameters.rope_type ?? \"default\"\n"
                           "  const c = has(config.rope_parameters.factor)\n"),
                   config, 2, 13, "config key 'rope_parameters' is a string, not an object: config.rope_parameters.rope_theta cannot be read");
  config["rope_parameters"] = {{"rope_theta", {1, 2}}};
  expect_one_error(program("  const a = config.rope_parameters.rope_theta.x ?? 1.0\n"), config, 2, 13,
                   "config key 'rope_parameters.rope_theta' is an array, not an object: config.rope_parameters.rope_theta.x cannot be read");
  config["rope_parameters"] = 7;
  expect_one_error(program("  const a = contains(config.rope_parameters.list, 1)\n"), config, 2, 22,
                   "config key 'rope_parameters' is a number, not an object: config.rope_parameters.list cannot be read");
}

lg::ir::Graph lower_llama(const nlohmann::json& config) {
  return lg::lang::lower_file(kSource + "/models/llama.lg", config, {.max_seq = 64});
}

void expect_llama_refuses(const nlohmann::json& config, const std::string& says) {
  try {
    lower_llama(config);
    ADD_FAILURE() << "accepted; expected: " << says;
  } catch (const lg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(ConfigKeys, LlamaRefusesAConfigItCannotReadTheRopeOf) {
  auto config = load_json(kShared + "/fixtures/tiny-llama3/config.json");
  EXPECT_NO_THROW(lower_llama(config));
  config["rope_parameters"] = "x";
  expect_llama_refuses(config, "config key 'rope_parameters' is a string, not an object");
}

// transformers' _compute_llama3_parameters reads factor, low_freq_factor, high_freq_factor and
// original_max_position_embeddings without defaults, and the linear scaling its factor; llama.lg
// made up 1.0, 1.0, 4.0 and 8192 for them.
TEST(ConfigKeys, LlamaScaledRopeNeedsTheParametersTransformersReadsWithoutDefaults) {
  const auto base = load_json(kShared + "/fixtures/tiny-llama3/config.json");
  ASSERT_EQ(base["rope_parameters"]["rope_type"], "llama3");
  for (const char* key : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    SCOPED_TRACE(key);
    auto config = base;
    config["rope_parameters"].erase(key);
    expect_llama_refuses(config, "requirement failed: llama.lg: llama3 RoPE needs low_freq_factor, high_freq_factor and "
                                 "original_max_position_embeddings in rope_parameters");
    config["rope_parameters"][key] = nullptr;
    expect_llama_refuses(config, "llama3 RoPE needs low_freq_factor");
  }
  auto config = base;
  config["rope_parameters"].erase("factor");
  expect_llama_refuses(config, "requirement failed: llama.lg: RoPE scaling (rope_type \"linear\" or \"llama3\") needs "
                               "rope_parameters.factor in config.json");
  config["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 10000.0}};
  expect_llama_refuses(config, "needs rope_parameters.factor in config.json");
  config["rope_parameters"]["factor"] = 2.0;
  EXPECT_NO_THROW(lower_llama(config));
  // The default RoPE reads none of them.
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  EXPECT_NO_THROW(lower_llama(config));
  // Older configs: the same keys in a top-level rope_scaling.
  config.erase("rope_parameters");
  config["rope_theta"] = 500000.0;
  config["rope_scaling"] = base["rope_parameters"];
  config["rope_scaling"].erase("rope_theta");
  EXPECT_NO_THROW(lower_llama(config));
  config["rope_scaling"].erase("high_freq_factor");
  expect_llama_refuses(config, "llama3 RoPE needs low_freq_factor");
}

// `"rms_norm_eps": "1e-5"` failed inside the prelude's rms_norm as `<prelude>:6:36: operator '+'
// cannot combine tensor f32[T, 1] and string "1e-5"`, which named no config key. A value read from
// config.json keeps its key through consts and fn arguments, and the messages about it name it.
TEST(ConfigKeys, AnErrorAboutAConfigValueNamesItsKey) {
  std::string text;
  {
    std::ifstream in(kSource + "/models/qwen3.lg");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto config = tiny_qwen3_config();
  config["rms_norm_eps"] = "1e-5";
  const auto out = lg::lang::check_source("qwen3.lg", text, config, {});
  ASSERT_FALSE(out.ok);
  ASSERT_EQ(out.diagnostics.size(), 1u) << out.rendered;
  EXPECT_EQ(out.diagnostics[0].message,
            "operator '+' cannot combine tensor f32[T, 1] and string \"1e-5\" (config.rms_norm_eps)")
      << out.rendered;
  EXPECT_NE(out.rendered.find("<prelude>:"), std::string::npos) << out.rendered;
  EXPECT_NE(out.rendered.find("note: in fn 'rms_norm', inlined here"), std::string::npos) << out.rendered;
  // Through `??` and a layer's config array entry too; a literal default names nothing.
  const auto cfg = tiny_qwen3_config();
  expect_one_error(program("  dims { Z = config.rms_norm_eps ?? 1 }\n"), cfg, 2, 14,
                   "dim 'Z' must be a positive integer of at most 2^40, found float 1e-06 (config.rms_norm_eps)");
  expect_one_error(program("  dims { Z = config.nope ?? 0.5 }\n"), cfg, 2, 14,
                   "dim 'Z' must be a positive integer of at most 2^40, found float 0.5");
  expect_one_error(program("  const k = config.layer_types[1] * 2\n"), cfg, 2, 13,
                   "operator '*' cannot combine string \"full_attention\" (config.layer_types[1]) and int 2");
}

}  // namespace
