// config.json / generation_config.json / model directories: the shared checkpoints' configs,
// published Qwen2.5-style and Qwen3-style variants, and every refusal naming the file and field.
#include "model/config.h"

#include <cmath>
#include <gtest/gtest.h>
#include <tuple>

#include "model/generation_config.h"
#include "model/json_fields.h"
#include "model/model_dir.h"
#include "test_util.h"

namespace lg::model {
namespace {

using test::error_of;
using test::TempDir;
using test::write_file;
using nlohmann::json;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

const std::filesystem::path kSharedDir = LG_SHARED_DIR;

json qwen3_22m() { return read_json_file(kSharedDir / "models/qwen3-pycode-22m/config.json"); }

// The shape of Qwen2.5-7B-Instruct's published config.json (transformers 4.43 era): no head_dim,
// torch_dtype, top-level rope_theta, rope_scaling null, a sliding window that is switched off.
json qwen25_style() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 152064, "rope_scaling": null})");
}

TEST(Config, Qwen3Pycode22m) {
  auto c = load_config(kSharedDir / "models/qwen3-pycode-22m/config.json");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Qwen3ForCausalLM"});
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.intermediate_size, 512);
  EXPECT_EQ(c.num_hidden_layers, 8);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 128);  // != hidden / heads = 32: must come from the field, not be derived
  EXPECT_FALSE(c.head_dim_derived);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_theta_field, "rope_parameters.rope_theta");
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151643});
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.layer_types.size(), 8u);
  EXPECT_FALSE(c.use_sliding_window);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.max_window_layers, 28);
  EXPECT_EQ(c.raw["rope_parameters"]["rope_type"], "default");  // raw kept for config.x.y lookups
  EXPECT_HAS(c.source, "config.json");
}

TEST(Config, DecodeWeightBytesOfQwen3_8B) {
  // Qwen3-8B: 8.19B parameters with the untied head; a decode step reads all but the embedding
  // table (the norms are 0.01% and left out).
  const ModelConfig c = parse_config(json::parse(R"({
    "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 12288,
    "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000, "max_position_embeddings": 40960,
    "tie_word_embeddings": false})"), "qwen3-8b");
  EXPECT_NEAR(static_cast<double>(decode_weight_bytes(c)) / 2, 8.19e9 - 151936.0 * 4096, 0.01e9);
}

TEST(Config, TinyFixtures) {
  auto q3 = load_config(kSharedDir / "fixtures/tiny-qwen3/config.json");
  EXPECT_EQ(q3.head_dim, 32);
  EXPECT_TRUE(q3.tie_word_embeddings);
  EXPECT_TRUE(q3.eos_token_ids.empty());  // "eos_token_id": null
  EXPECT_FALSE(q3.bos_token_id.has_value());
  EXPECT_EQ(q3.dtype, DType::F32);
  auto mqa = load_config(kSharedDir / "fixtures/tiny-qwen3-untied-mqa/config.json");
  EXPECT_EQ(mqa.num_key_value_heads, 1);
  EXPECT_EQ(mqa.head_dim, 16);
  EXPECT_FALSE(mqa.tie_word_embeddings);
}

TEST(Config, Qwen2WithoutHeadDimDerivesIt) {
  auto c = load_config(kSharedDir / "fixtures/tiny-qwen2/config.json");
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_FALSE(c.raw.contains("head_dim"));
  EXPECT_EQ(c.head_dim, 16);  // 64 / 4
  EXPECT_TRUE(c.head_dim_derived);
  EXPECT_TRUE(c.qkv_bias);  // Qwen2: q/k/v bias always, no config field
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_FALSE(c.tie_word_embeddings);

  auto j = qwen25_style();
  c = parse_config(j, "qwen25/config.json");
  EXPECT_EQ(c.head_dim, 128);  // 3584 / 28
  EXPECT_TRUE(c.head_dim_derived);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_theta_field, "rope_theta");
  EXPECT_EQ(c.dtype_name, "bfloat16");  // from torch_dtype
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.sliding_window, 131072);  // read and reported, not applied (use_sliding_window false)
  EXPECT_FALSE(c.use_sliding_window);

  j["hidden_size"] = 3585;
  EXPECT_HAS(error_of([&] { parse_config(j, "qwen25/config.json"); }), "no field 'head_dim'");
}

TEST(Config, MissingRequiredFieldsAreNamed) {
  for (const char* field : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "rms_norm_eps", "max_position_embeddings", "model_type"}) {
    auto j = qwen3_22m();
    j.erase(field);
    EXPECT_EQ(error_of([&] { parse_config(j, "config.json"); }),
              std::string("config.json: missing required field '") + field + "'");
  }
  auto j = qwen3_22m();
  j.erase("rope_parameters");
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "missing required field 'rope_theta'");
  // null counts as missing.
  j = qwen3_22m();
  j["hidden_size"] = nullptr;
  EXPECT_EQ(error_of([&] { parse_config(j, "config.json"); }), "config.json: missing required field 'hidden_size'");
}

TEST(Config, MissingFieldInAFileNamesTheFile) {
  TempDir dir;
  auto j = qwen3_22m();
  j.erase("hidden_size");
  write_file(dir / "config.json", j.dump());
  EXPECT_EQ(error_of([&] { load_config(dir / "config.json"); }),
            (dir / "config.json").string() + ": missing required field 'hidden_size'");
  write_file(dir / "config.json", "{\"hidden_size\": 12,");
  EXPECT_HAS(error_of([&] { load_config(dir / "config.json"); }), "config.json: malformed JSON: parse error at line 1, column");
  EXPECT_EQ(error_of([&] { load_config(dir / "config.json"); }).find("json.exception"), std::string::npos);  // nlohmann's id
  EXPECT_HAS(error_of([&] { load_config(dir / "absent.json"); }), "absent.json: cannot open");
  // The raw document `lg check/ir/compile -c` read: not an object names the file (the binder
  // could only name "config.json" at the .lg program's line).
  write_file(dir / "config.json", "[]");
  EXPECT_EQ(error_of([&] { read_config_json(dir / "config.json"); }),
            (dir / "config.json").string() + ": a model config must be a JSON object, found array");
}

// A required field that is present with the wrong type says so, never "missing" (an index's
// `"weight_map": [1,2]` was reported as a missing weight_map): every required read of json_fields.
TEST(Config, RequiredFieldsOfTheWrongTypeSaySoNotMissing) {
  const json j = json::parse(R"({"n": "8", "x": 1.5, "s": 5, "o": [1,2], "null": null})");
  EXPECT_EQ(error_of([&] { json_fields::req_int(j, "n", "f.json"); }), "f.json: field 'n' must be an integer, got string \"8\"");
  EXPECT_EQ(json_fields::req_number(j, "s", "f.json"), 5);
  EXPECT_EQ(error_of([&] { json_fields::req_number(j, "o", "f.json"); }), "f.json: field 'o' must be a number, got array [1,2]");
  EXPECT_EQ(error_of([&] { json_fields::req_string(j, "s", "f.json"); }), "f.json: field 's' must be a string, got number 5");
  EXPECT_EQ(error_of([&] { json_fields::req_object(j, "o", "f.json", "an object of a -> b"); }),
            "f.json: field 'o' must be an object of a -> b, got array [1,2]");
  for (const char* absent : {"absent", "null"}) {  // null counts as absent, as transformers writes it
    const std::string missing = std::string("f.json: missing required field '") + absent + "'";
    EXPECT_EQ(error_of([&] { json_fields::req_int(j, absent, "f.json"); }), missing);
    EXPECT_EQ(error_of([&] { json_fields::req_string(j, absent, "f.json"); }), missing);
    EXPECT_EQ(error_of([&] { json_fields::req_object(j, absent, "f.json"); }), missing);
  }
  auto config = qwen3_22m();
  config["model_type"] = 5;
  EXPECT_EQ(error_of([&] { parse_config(config, "config.json"); }), "config.json: field 'model_type' must be a string, got number 5");
}

TEST(Config, WrongTypesAndValuesAreNamed) {
  auto bad = [](const char* field, json value) {
    auto j = qwen3_22m();
    j[field] = value;
    return error_of([&] { parse_config(j, "config.json"); });
  };
  EXPECT_HAS(bad("hidden_size", "128"), "field 'hidden_size' must be an integer, got string");
  EXPECT_HAS(bad("hidden_size", 0), "field 'hidden_size' must be positive");
  EXPECT_HAS(bad("num_key_value_heads", 3), "not a multiple of num_key_value_heads (3)");
  EXPECT_HAS(bad("tie_word_embeddings", 1), "field 'tie_word_embeddings' must be true or false");
  EXPECT_HAS(bad("rms_norm_eps", "1e-6"), "field 'rms_norm_eps' must be a number");
  EXPECT_HAS(bad("eos_token_id", "</s>"), "field 'eos_token_id' must be a token id");
  EXPECT_HAS(bad("eos_token_id", json::array({1, "x"})), "field 'eos_token_id[1]'");
  // 2^64 - 1 parses as unsigned: refused, not wrapped to the id -1.
  EXPECT_HAS(bad("eos_token_id", 18446744073709551615ull), "field 'eos_token_id' must be a token id");
  EXPECT_HAS(bad("eos_token_id", json::array({2, 9223372036854775808ull})), "field 'eos_token_id[1]'");
  EXPECT_HAS(bad("architectures", "Qwen3ForCausalLM"), "field 'architectures'");
  // A size transformers builds modules by is refused as a float (its range() and nn.Linear refuse
  // one), naming the field; the .lg binder's refusal named only the program's dim.
  EXPECT_EQ(bad("num_hidden_layers", 8.0),
            "config.json: field 'num_hidden_layers' must be an integer, got float 8.0: transformers sizes the model's "
            "modules by it (range(), nn.Linear), which refuse a float (write 8)");
  EXPECT_HAS(bad("hidden_size", 128.5), "field 'hidden_size' must be an integer, got float 128.5: transformers");
  // An integer past 64 bits, which JSON reads as a float, is too large rather than "a float".
  EXPECT_EQ(bad("vocab_size", json::parse("123456789012345678901234567890")),
            "config.json: field 'vocab_size' is 1.2345678901234568e+29, out of the 64-bit integers' range");
  // One in [2^63, 2^64) reads as unsigned: the same words (it was "must be an integer, got number").
  EXPECT_EQ(bad("vocab_size", json::parse("10000000000000000000")),
            "config.json: field 'vocab_size' is 10000000000000000000, out of the 64-bit integers' range");
  EXPECT_HAS(bad("max_position_embeddings", json::parse("-1e30")), "field 'max_position_embeddings' is -1e+30, out of "
                                                                  "the 64-bit integers' range");
  {
    TempDir dir;
    auto j = qwen3_22m();
    j["n_embd"] = 64.0;  // GPT-2's name: lg check --config reads the raw document
    write_file(dir / "config.json", j.dump());
    EXPECT_HAS(error_of([&] { read_config_json(dir.path()); }),
               (dir / "config.json").string() + ": field 'n_embd' must be an integer, got float 64.0");
  }
  // An integer written as a float is accepted when exact where transformers sizes nothing by it.
  auto j = qwen3_22m();
  j["max_position_embeddings"] = 4096.0;
  EXPECT_EQ(parse_config(j, "config.json").max_position_embeddings, 4096);
  j["max_position_embeddings"] = 4096.5;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "field 'max_position_embeddings' must be an integer");
}

TEST(Config, DefaultsWhenOptionalFieldsAreAbsent) {
  auto j = qwen3_22m();
  j["num_key_value_heads"] = nullptr;  // transformers: null means MHA
  for (const char* f : {"tie_word_embeddings", "attention_bias", "dtype", "eos_token_id",
                        "bos_token_id", "layer_types", "use_sliding_window", "sliding_window"})
    j.erase(f);
  auto c = parse_config(j, "config.json");
  EXPECT_EQ(c.num_key_value_heads, 4);  // = num_attention_heads
  EXPECT_TRUE(c.num_key_value_heads_defaulted);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.dtype.has_value());
  EXPECT_TRUE(c.eos_token_ids.empty());
}

TEST(Config, AbsentFieldsWhoseTransformersDefaultIsAmbiguousAreRefused) {
  // Qwen2Config/Qwen3Config default num_key_value_heads to 32 when the key is absent (null means
  // MHA), and Qwen3Config defaults head_dim to 128: lanegraph refuses rather than pick one.
  auto j = qwen3_22m();
  j.erase("num_key_value_heads");
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }),
             "config.json: missing field 'num_key_value_heads': transformers' qwen3 default is 32");
  j["num_attention_heads"] = 32;
  j["hidden_size"] = 4096;
  auto c = parse_config(j, "config.json");  // 32 heads: both readings agree
  EXPECT_EQ(c.num_key_value_heads, 32);
  j = qwen3_22m();
  j.erase("head_dim");  // hidden 128 / 4 heads = 32, but transformers would use 128
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }),
             "config.json: missing field 'head_dim': transformers' qwen3 default is 128");
  j["hidden_size"] = 512;  // 512 / 4 = 128: both readings agree
  c = parse_config(j, "config.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_TRUE(c.head_dim_derived);
}

TEST(Config, EosTokenIdList) {
  auto j = qwen3_22m();
  j["eos_token_id"] = json::array({151645, 151643});
  EXPECT_EQ(parse_config(j, "config.json").eos_token_ids, (std::vector<int64_t>{151645, 151643}));
}

TEST(Config, AttentionBiasOnQwen3AppliesToAllFourProjections) {
  auto j = qwen3_22m();
  j["attention_bias"] = true;
  auto c = parse_config(j, "config.json");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_bias);
}

TEST(Config, DtypeWinsOverTorchDtype) {
  auto j = qwen3_22m();
  j["torch_dtype"] = "float32";
  EXPECT_EQ(parse_config(j, "config.json").dtype, DType::BF16);
  j.erase("dtype");
  EXPECT_EQ(parse_config(j, "config.json").dtype, DType::F32);
}

TEST(Config, RopeVariants) {
  auto j = qwen3_22m();
  j["rope_theta"] = 1e6;  // both places, agreeing: fine
  EXPECT_EQ(parse_config(j, "config.json").rope_theta, 1e6);
  j["rope_theta"] = 1e4;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "disagree");

  j = qwen3_22m();
  j["rope_parameters"]["rope_type"] = "yarn";
  j["rope_parameters"]["factor"] = 4.0;
  auto msg = error_of([&] { parse_config(j, "config.json"); });
  EXPECT_HAS(msg, "config.json: field 'rope_parameters.rope_type' is 'yarn'");

  j = qwen25_style();
  j["rope_scaling"] = json{{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  msg = error_of([&] { parse_config(j, "config.json"); });
  EXPECT_HAS(msg, "field 'rope_scaling'");
  EXPECT_HAS(msg, "'yarn'");
  j["rope_scaling"] = json{{"rope_type", "default"}};
  EXPECT_EQ(parse_config(j, "config.json").rope_type, "default");
}

TEST(Config, SlidingWindowThatWouldApplyIsRefused) {
  // Qwen2 style: window on layers >= max_window_layers.
  auto j = qwen25_style();
  j["use_sliding_window"] = true;
  j["sliding_window"] = 4096;
  j["max_window_layers"] = 26;
  auto msg = error_of([&] { parse_config(j, "config.json"); });
  EXPECT_HAS(msg, "config.json: sliding-window attention (window 4096) would apply to layers [26, 27]");
  // All layers below max_window_layers: no layer uses it, so the model is plain causal.
  j["max_window_layers"] = 28;
  EXPECT_EQ(parse_config(j, "config.json").sliding_window, 4096);

  // max_window_layers absent: transformers' default 28, so a 28-layer model has no sliding layer.
  j.erase("max_window_layers");
  EXPECT_NO_THROW(parse_config(j, "config.json"));
  j["num_hidden_layers"] = 30;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "would apply to layers [28, 29]");

  // transformers >= 5 style: explicit layer_types.
  j = qwen3_22m();
  j["use_sliding_window"] = true;
  j["sliding_window"] = 512;
  j["layer_types"][5] = "sliding_attention";
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "would apply to layers [5]");
  // A sliding layer with no window in effect is contradictory: refused, not guessed.
  j["use_sliding_window"] = false;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }),
             "field 'layer_types' marks layers [5] as sliding_attention but no window is in effect");
  j["layer_types"][5] = "linear_attention";
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "field 'layer_types[5]'");
  j = qwen3_22m();
  j["layer_types"].erase(0);
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "'layer_types' has 7 entries");
}

TEST(Config, SlidingWindowRefusalCountsTheLayersItNames) {
  // A window from layer 0 of 10^15 layers: named and counted, not listed (that took 8 PB).
  auto j = qwen25_style();
  j["use_sliding_window"] = true;
  j["sliding_window"] = 4096;
  j["max_window_layers"] = 0;
  j["num_hidden_layers"] = 1000000000000000;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }),
             "would apply to layers [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ..., 999999999999999 "
             "(1000000000000000 layers)]");
  // max_window_layers below 0 puts every layer past it: layer numbers from 0, not -2.
  j["num_hidden_layers"] = 3;
  j["max_window_layers"] = -2;
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "would apply to layers [0, 1, 2] (fields");
}

// The tokenizer's eos id joins the configs' (lg run, serve, batch, inspect), once.
TEST(GenerationConfig, AnEosIdIsAddedOnce) {
  ModelConfig c;
  c.eos_token_ids = {7};
  GenerationConfig g = parse_generation_config(json{{"eos_token_id", json::array({5, 7})}}, "generation_config.json", c);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{5, 7}));
  add_eos_token_id(g, 7);
  add_eos_token_id(g, std::nullopt);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{5, 7}));
  add_eos_token_id(g, 9);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{5, 7, 9}));
}

// The sampling defaults vLLM takes from generation_config.json (Qwen2.5-7B-Instruct's published
// values here), the note that lists them, and the values it refuses, named.
TEST(GenerationConfig, SamplingDefaultsAreReadListedAndChecked) {
  const ModelConfig c;
  const json qwen25 = json::parse(R"({"bos_token_id": 151643, "pad_token_id": 151643, "do_sample": true,
    "eos_token_id": [151645, 151643], "repetition_penalty": 1.05, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
    "transformers_version": "4.37.0"})");
  const GenerationConfig g = parse_generation_config(qwen25, "generation_config.json", c);
  EXPECT_EQ(g.repetition_penalty, 1.05);
  EXPECT_EQ(g.min_p, 0);
  EXPECT_FALSE(g.max_new_tokens);
  EXPECT_EQ(sampling_defaults(g), "temperature 0.7, top_k 20, top_p 0.8, repetition_penalty 1.05");
  const GenerationConfig more = parse_generation_config(
      json{{"min_p", 0.05}, {"max_new_tokens", 2048}, {"temperature", 0.6}}, "generation_config.json", c);
  EXPECT_EQ(more.min_p, 0.05);
  EXPECT_EQ(more.max_new_tokens, 2048);
  EXPECT_EQ(sampling_defaults(more), "min_p 0.05, max_new_tokens 2048");  // temperature only with do_sample
  EXPECT_EQ(sampling_defaults(parse_generation_config(json::object(), "generation_config.json", c)), "");
  const std::tuple<const char*, json, const char*> bad[] = {
      {"min_p", 1.5, "field 'min_p' must be in [0, 1]"},
      {"min_p", "x", "field 'min_p' must be a number"},
      {"repetition_penalty", 0, "field 'repetition_penalty' must be > 0"},
      {"max_new_tokens", 0, "field 'max_new_tokens' must be >= 1"}};
  for (const auto& b : bad) {
    const json doc = {{std::get<0>(b), std::get<1>(b)}};
    EXPECT_HAS(error_of([&] { parse_generation_config(doc, "generation_config.json", c); }),
               std::string("generation_config.json: ") + std::get<2>(b));
  }
  // A wrong value is named with its type, and a null once ("got null", not "got null null").
  EXPECT_EQ(error_of([&] { parse_generation_config(json{{"eos_token_id", json::array({1, nullptr})}}, "g.json", c); }),
            "g.json: field 'eos_token_id[1]' must be an integer token id, got null");
  EXPECT_EQ(error_of([&] { parse_generation_config(json{{"eos_token_id", json::array({1, "2"})}}, "g.json", c); }),
            "g.json: field 'eos_token_id[1]' must be an integer token id, got string \"2\"");
}

TEST(Config, NestingPastTheLimitIsAnErrorNamingTheFile) {
  // 100,000 nested arrays overflowed the stack copying the document.
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  write_file(dir / "config.json", R"({"model_type": "llama", "x": )" + deep + "}");
  EXPECT_EQ(error_of([&] { load_config(dir / "config.json"); }),
            (dir / "config.json").string() + ": the JSON is nested more than 10000 levels deep");
  EXPECT_HAS(error_of([&] { read_config_json(dir.path()); }), "nested more than 10000 levels deep");
}

// Other families: only what every family has is required; their programs read the rest. GPT-2
// names its dims otherwise, Llama 3.1 scales its RoPE, Gemma 3 has sliding layers with per-type
// RoPE parameters: all parse, nothing of Qwen is assumed.
TEST(Config, OtherFamiliesParseWithoutQwenDefaultsOrRefusals) {
  const auto gpt2 = load_config(kSharedDir / "fixtures/tiny-gpt2/config.json");
  EXPECT_EQ(gpt2.model_type, "gpt2");
  EXPECT_EQ(gpt2.vocab_size, 512);
  EXPECT_EQ(gpt2.hidden_size, 0);  // n_embd: gpt2.lg reads it
  EXPECT_EQ(gpt2.max_position_embeddings, 0);
  EXPECT_EQ(gpt2.head_dim, 0);
  EXPECT_EQ(gpt2.hidden_act, "silu");  // absent: the Llama-style default (gpt2.lg reads activation_function)
  const auto llama = load_config(kSharedDir / "fixtures/tiny-llama3/config.json");
  EXPECT_EQ(llama.rope_type, "llama3");
  EXPECT_EQ(llama.rope_theta, 500000.0);
  EXPECT_FALSE(llama.qk_norm);
  EXPECT_FALSE(llama.qkv_bias);
  const auto gemma = load_config(kSharedDir / "fixtures/tiny-gemma3/config.json");
  EXPECT_EQ(gemma.layer_types, (std::vector<std::string>{"sliding_attention", "full_attention", "sliding_attention",
                                                         "full_attention"}));
  EXPECT_EQ(gemma.sliding_window, 8);
  EXPECT_EQ(gemma.rope_theta_field, "");  // per layer type: gemma3_text.lg reads them
  // A Llama-style config without head_dim derives it; without num_key_value_heads it is MHA
  // (LlamaConfig's default), not Qwen's 32.
  auto j = read_json_file(kSharedDir / "fixtures/tiny-llama3/config.json");
  j.erase("head_dim");
  j.erase("num_key_value_heads");
  const auto c = parse_config(j, "config.json");
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_TRUE(c.head_dim_derived);
  EXPECT_EQ(c.num_key_value_heads, 4);
  // Type errors are still named.
  j["hidden_size"] = "64";
  EXPECT_HAS(error_of([&] { parse_config(j, "config.json"); }), "field 'hidden_size' must be an integer");
  j = read_json_file(kSharedDir / "fixtures/tiny-gpt2/config.json");
  j.erase("model_type");
  EXPECT_EQ(error_of([&] { parse_config(j, "config.json"); }), "config.json: missing required field 'model_type'");
}

// Gemma3TextConfig (transformers 5.17, a strict dataclass) defaults an absent num_key_value_heads
// to 4 and head_dim to 256, and refuses an explicit null for them and query_pre_attn_scalar ("Field
// 'head_dim' expected int, got NoneType"). The generic reading made an absent or null
// num_key_value_heads MHA and head_dim hidden_size / heads: lg bench's floor and lg inspect
// sized another model.
TEST(Config, Gemma3AbsentDimsAreItsConfigClassDefaultsAndNullIsRefused) {
  auto j = read_json_file(kSharedDir / "fixtures/tiny-gemma3/config.json");
  j["num_attention_heads"] = 8;  // so that neither default is the Llama-style reading
  j.erase("num_key_value_heads");
  j.erase("head_dim");
  const auto c = parse_config(j, "config.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_TRUE(c.num_key_value_heads_defaulted);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_FALSE(c.head_dim_derived);
  for (const char* field : {"num_key_value_heads", "head_dim", "query_pre_attn_scalar"}) {
    SCOPED_TRACE(field);
    auto n = j;
    n[field] = nullptr;
    const std::string e = error_of([&] { parse_config(n, "config.json"); });
    EXPECT_HAS(e, std::string("config.json: field '") + field + "' is null");
    EXPECT_HAS(e, "Gemma3TextConfig");
  }
  // Another family keeps its own reading of a null (LlamaConfig: MHA).
  auto llama = read_json_file(kSharedDir / "fixtures/tiny-llama3/config.json");
  llama["num_key_value_heads"] = nullptr;
  EXPECT_EQ(parse_config(llama, "config.json").num_key_value_heads, llama["num_attention_heads"].get<int64_t>());
}

// MistralConfig (transformers 5.17, a strict dataclass) types num_key_value_heads `int` with
// default 8: an absent field is 8 and an explicit null fails its validation. parse_config read
// both as MHA (the Llama reading), and mistral.lg read a null so too: lg inspect, lg bench's floor
// and the runs sized a model transformers does not load, or another one.
TEST(Config, MistralAbsentKvHeadsIsEightAndNullIsRefused) {
  auto j = read_json_file(kSharedDir / "fixtures/tiny-mistral/config.json");
  j["num_attention_heads"] = 16;  // so that 8 divides them and differs from MHA
  j["hidden_size"] = 256;
  j.erase("num_key_value_heads");
  const auto c = parse_config(j, "config.json");
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_TRUE(c.num_key_value_heads_defaulted);
  j["num_key_value_heads"] = nullptr;
  const std::string e = error_of([&] { parse_config(j, "config.json"); });
  EXPECT_HAS(e, "config.json: field 'num_key_value_heads' is null: transformers' MistralConfig requires an integer");
  EXPECT_HAS(e, "leave the field out for its default (8)");
  // LlamaConfig, Phi3Config and Qwen3Config type it `int | None`: null is MHA there.
  for (const char* fixture : {"tiny-llama3", "tiny-phi3", "tiny-qwen3"}) {
    SCOPED_TRACE(fixture);
    auto other = read_json_file(kSharedDir / "fixtures" / fixture / "config.json");
    other["num_key_value_heads"] = nullptr;
    EXPECT_EQ(parse_config(other, "config.json").num_key_value_heads, other["num_attention_heads"].get<int64_t>());
  }
}

// Every family's transformers config class (5.17) types tie_word_embeddings `bool`, and its strict
// validation refuses null: parse_config read a null as absent, false, and the hand-written lane
// ran a tied Qwen checkpoint with an lm_head it does not have (or guessed the other way).
TEST(Config, ANullTieWordEmbeddingsIsRefused) {
  const std::pair<const char*, const char*> families[] = {
      {"tiny-gemma3", "Gemma3TextConfig"}, {"tiny-gpt2", "GPT2Config"},   {"tiny-llama3", "LlamaConfig"},
      {"tiny-mistral", "MistralConfig"},   {"tiny-phi3", "Phi3Config"},   {"tiny-qwen2", "Qwen2Config"},
      {"tiny-qwen3", "Qwen3Config"},       {"tiny-qwen3-moe", "Qwen3MoeConfig"}};
  for (const auto& [fixture, cls] : families) {
    SCOPED_TRACE(fixture);
    auto j = read_json_file(kSharedDir / "fixtures" / fixture / "config.json");
    j["tie_word_embeddings"] = nullptr;
    EXPECT_EQ(error_of([&] { parse_config(j, "config.json"); }),
              std::string("config.json: field 'tie_word_embeddings' is null: transformers' ") + cls +
                  " requires true or false there and refuses null; leave the field out for its default");
    j.erase("tie_word_embeddings");
    EXPECT_NO_THROW(parse_config(j, "config.json"));
  }
}

// lg bench's floor for a mixture of experts counts the weights a token reads: attention, the
// router and k of E experts per sparse layer, the LM head. Qwen3-30B-A3B (bench/shapes): 48 layers
// of q/k/v/o (18,874,368 weights) + router 128 x 2048 + 8 x 3 x 768 x 2048, head 151,936 x 2048.
TEST(Config, MixtureOfExpertsDecodeBytesCountTheRoutedExperts) {
  const auto c = load_config(std::filesystem::path(LG_SOURCE_DIR) / "bench/shapes/qwen3-30b-a3b/config.json");
  EXPECT_EQ(c.model_type, "qwen3_moe");
  const uint64_t attention = (4096 + 2 * 512) * 2048 + 2048 * 4096, moe = 128 * 2048 + 8 * 3 * 768 * 2048;
  EXPECT_EQ(decode_weight_bytes(c), 2 * (48 * (attention + moe) + 151936ull * 2048));
  EXPECT_EQ(decode_weight_bytes(c), 6083313664ull);
  // Layers in mlp_only_layers read the dense MLP (intermediate_size) instead.
  auto j = read_json_file(std::filesystem::path(LG_SOURCE_DIR) / "bench/shapes/qwen3-30b-a3b/config.json");
  j["mlp_only_layers"] = {0, 5};
  EXPECT_EQ(decode_weight_bytes(parse_config(j, "config.json")),
            6083313664ull + 2 * 2 * (3ull * 6144 * 2048 - moe));
  // A step of B tokens reads the expected union of their experts once: 128 (1 - (120/128)^B).
  EXPECT_EQ(decode_weight_bytes(c, 1), decode_weight_bytes(c));
  for (const int64_t B : {16, 64}) {
    const double routed = 128.0 * (1.0 - std::pow(120.0 / 128.0, static_cast<double>(B)));
    const auto experts = static_cast<uint64_t>(std::llround(routed * 3 * 768 * 2048));
    EXPECT_EQ(decode_weight_bytes(c, B), 2 * (48 * (attention + 128 * 2048 + experts) + 151936ull * 2048)) << B;
  }
  EXPECT_NEAR(static_cast<double>(decode_weight_bytes(c, 100000)),
              2.0 * (48.0 * (attention + 128 * 2048 + 128.0 * 3 * 768 * 2048) + 151936.0 * 2048), 1e3);
  const auto dense = load_config(kSharedDir / "fixtures/tiny-qwen3/config.json");  // no experts: the batch changes nothing
  EXPECT_EQ(decode_weight_bytes(dense, 64), decode_weight_bytes(dense));
  // The tiny fixture (8 experts, top-2, all layers sparse).
  const auto tiny = load_config(kSharedDir / "fixtures/tiny-qwen3-moe/config.json");
  EXPECT_EQ(decode_weight_bytes(tiny), 2 * (3 * ((64 + 2 * 32) * 64 + 64 * 64 + 8 * 64 + 2 * 3 * 32 * 64) + 512 * 64));
}

TEST(Config, DecodeWeightBytesSaturatesForAbsurdDims) {
  // 2^20 heads of 2^20 at hidden 2^20: 2^62 bytes a layer, 2^72 for 1,024 layers, past uint64.
  json j = {{"model_type", "llama"},        {"hidden_size", 1 << 20},      {"num_attention_heads", 1 << 20},
            {"head_dim", 1 << 20},          {"num_hidden_layers", 1024},   {"intermediate_size", 1}};
  EXPECT_EQ(decode_weight_bytes(parse_config(j, "config.json")), UINT64_MAX);
  // A layer count no loop gets through: counted, not walked (with experts, sparse and dense ones).
  j = {{"model_type", "qwen3_moe"}, {"hidden_size", 1}, {"num_attention_heads", 1}, {"head_dim", 1},
       {"intermediate_size", 1},    {"num_experts", 2}, {"num_experts_per_tok", 1}, {"moe_intermediate_size", 1},
       {"decoder_sparse_step", 2},  {"mlp_only_layers", {1, 1, 3, 4}}, {"num_hidden_layers", int64_t{1} << 40}};
  // A layer: attention (1 + 2) + 1 = 4; dense MLP 3; sparse: router 2 + one expert 3 = 5. Layers 1
  // and 3 are sparse ones listed dense (1 twice, 4 is dense anyway).
  const uint64_t L = uint64_t{1} << 40, sparse = L / 2 - 2;
  EXPECT_EQ(decode_weight_bytes(parse_config(j, "config.json")), 2 * (4 * L + 5 * sparse + 3 * (L - sparse)));
}

TEST(GenerationConfig, DefaultsWhenAbsentAndEosMerged) {
  TempDir dir;
  auto j = qwen3_22m();
  j["eos_token_id"] = json::array({151645, 151643});
  auto c = parse_config(j, "config.json");
  auto g = load_generation_config(dir / "generation_config.json", c);
  EXPECT_FALSE(g.do_sample);
  EXPECT_EQ(g.temperature, 1.0);
  EXPECT_EQ(g.top_p, 1.0);
  EXPECT_EQ(g.top_k, 0);
  EXPECT_EQ(g.repetition_penalty, 1.0);
  EXPECT_FALSE(g.max_new_tokens.has_value());
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(g.bos_token_id, 151643);

  // Qwen3-8B's published generation_config.json.
  write_file(dir / "generation_config.json", R"({"bos_token_id": 151643, "do_sample": true,
    "eos_token_id": [151645, 151643], "pad_token_id": 151643, "temperature": 0.6, "top_k": 20,
    "top_p": 0.95, "transformers_version": "4.51.0"})");
  c.eos_token_ids = {151643, 7};
  g = load_generation_config(dir / "generation_config.json", c);
  EXPECT_TRUE(g.do_sample);
  EXPECT_EQ(g.temperature, 0.6);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_EQ(g.top_p, 0.95);
  EXPECT_EQ(g.pad_token_id, 151643);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{151645, 151643, 7}));  // union, generation's first

  write_file(dir / "generation_config.json", R"({"top_k": "20"})");
  EXPECT_HAS(error_of([&] { load_generation_config(dir / "generation_config.json", c); }),
             "generation_config.json: field 'top_k' must be an integer");
  write_file(dir / "generation_config.json", R"({"top_p": 0})");
  EXPECT_HAS(error_of([&] { load_generation_config(dir / "generation_config.json", c); }), "field 'top_p'");
}

TEST(ModelDir, Qwen3Pycode22m) {
  auto m = ModelDir::open(kSharedDir / "models/qwen3-pycode-22m");
  EXPECT_EQ(m.config.hidden_size, 128);
  EXPECT_EQ(m.checkpoint.parameter_count(), 22'597'760u);
  ASSERT_TRUE(m.tokenizer_json.has_value());
  EXPECT_EQ(m.tokenizer_json->filename(), "tokenizer.json");
  EXPECT_EQ(m.generation.eos_token_ids, std::vector<int64_t>{151643});
  EXPECT_EQ(m.generation.pad_token_id, 151643);
  EXPECT_FALSE(ModelDir::open(kSharedDir / "fixtures/tiny-qwen2").tokenizer_json.has_value());
}

TEST(ModelDir, MissingDirectoryOrConfig) {
  TempDir dir;
  EXPECT_HAS(error_of([&] { ModelDir::open(dir / "nope"); }), "nope: model directory does not exist");
  // A Hugging Face id (as vLLM takes one) is not downloaded: said, with the command that does.
  EXPECT_EQ(error_of([&] { ModelDir::open("Qwen/Qwen3-0.6B"); }),
            "Qwen/Qwen3-0.6B: model directory does not exist (lanegraph reads a local directory and downloads nothing; "
            "for the Hugging Face model Qwen/Qwen3-0.6B: `huggingface-cli download Qwen/Qwen3-0.6B --local-dir DIR`, "
            "then -m DIR)");
  for (const std::string& path : {(dir / "nope").string(), std::string("./Qwen3-0.6B"), std::string("models/qwen/x")})
    EXPECT_EQ(error_of([&] { ModelDir::open(path); }).find("downloads nothing"), std::string::npos) << path;
  EXPECT_HAS(error_of([&] { ModelDir::open(dir.path()); }), "missing config.json");
  EXPECT_EQ(error_of([&] { ModelDir::open(dir.path()); }).find("adapter"), std::string::npos);
  // A LoRA adapter's folder (adapter_config.json, adapter_model.safetensors) is named as one.
  write_file(dir / "adapter_config.json", R"({"peft_type": "LORA"})");
  EXPECT_HAS(error_of([&] { ModelDir::open(dir.path()); }),
             "missing config.json (a Hugging Face model directory needs one); adapter_config.json makes it a PEFT "
             "adapter (LoRA) of a base model, which lanegraph does not apply");
  std::filesystem::remove(dir / "adapter_config.json");
  write_file(dir / "a_file", "{}");  // a path that exists, but is not a directory
  EXPECT_HAS(error_of([&] { ModelDir::open(dir / "a_file"); }), "a_file: is a file, not a model directory");
  // A config but no weights.
  write_file(dir / "config.json", qwen3_22m().dump());
  EXPECT_HAS(error_of([&] { ModelDir::open(dir.path()); }), "no model.safetensors");
}

// A quantized checkpoint (config.json's quantization_config, as AWQ, GPTQ and FP8 checkpoints
// have) is refused as such; its qweight/scales tensors or F8_E4M3 dtype were reported as 33
// missing tensors or an unsupported dtype (found by a new-user pass). A null one is none.
TEST(ModelDir, AQuantizedCheckpointIsRefusedAsSuch) {
  TempDir dir;
  const auto tiny = kSharedDir / "fixtures/tiny-qwen3";
  std::filesystem::copy_file(tiny / "model.safetensors", dir / "model.safetensors");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(tiny / "config.json"));
  config["quantization_config"] = {{"bits", 4}, {"group_size", 128}, {"quant_method", "awq"}};
  write_file(dir / "config.json", config.dump());
  EXPECT_EQ(error_of([&] { ModelDir::open(dir.path()); }),
            (dir / "config.json").string() +
                ": quantization_config (quant_method \"awq\"): a quantized checkpoint, which lanegraph does not run (it "
                "reads unquantized bf16, f16 and f32 weights): use the unquantized model");
  config["quantization_config"] = nullptr;
  write_file(dir / "config.json", config.dump());
  EXPECT_EQ(ModelDir::open(dir.path()).config.hidden_size, 64);
}

}  // namespace
}  // namespace lg::model
