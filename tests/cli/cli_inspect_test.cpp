// `lg inspect` on every family's fixture states only what config.json states: each config fact
// it prints is the file's value under the file's key (GPT-2's n_embd, not a hidden_size of 0),
// each such key the file has is printed, and the attention details it takes from the weights
// (q/k norm, a separate LM head) match the tensors listed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_run.h"
#include "common/model_copy.h"

namespace lg::cli_test {
namespace {

const char* const kFixtures[] = {"tiny-llama3", "tiny-mistral", "tiny-gemma3", "tiny-phi3",
                                 "tiny-gpt2",   "tiny-qwen3-moe", "tiny-qwen2", "tiny-qwen3"};

nlohmann::json config_of(const std::string& fixture) {
  std::ifstream in(kShared + "/fixtures/" + fixture + "/config.json");
  EXPECT_TRUE(in.good()) << fixture;
  return nlohmann::json::parse(in);
}

/// config.json's value at a dotted key ("rope_parameters.full_attention.rope_theta"); null if absent.
nlohmann::json at_path(const nlohmann::json& config, const std::string& key) {
  const nlohmann::json* j = &config;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) {
    if (!j->is_object() || !j->contains(part)) return nullptr;
    j = &(*j)[part];
  }
  return *j;
}

bool has_tensor(const nlohmann::json& inspect, const std::string& suffix) {
  for (const auto& t : inspect["tensors"]) {
    const std::string n = t["name"];
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) return true;
  }
  return false;
}

TEST(CliInspect, EveryConfigFactIsTheConfigsOwnValue) {
  for (const std::string fixture : kFixtures) {
    SCOPED_TRACE(fixture);
    const nlohmann::json config = config_of(fixture);
    const CliRun r = run_lg("inspect --json " + kShared + "/fixtures/" + fixture);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* group : {"dims", "experts", "attention", "norm_rope", "sliding_window", "embeddings"}) {
      if (!j.contains(group)) continue;
      for (const auto& [key, value] : j[group].items()) {
        if (key == "q_per_kv" || key == "head_dim_derived" || (key == "head_dim" && j[group].contains("head_dim_derived")))
          continue;  // derived, checked below
        const nlohmann::json stated = at_path(config, key);
        EXPECT_FALSE(stated.is_null()) << group << "." << key << " is printed but config.json does not state it";
        EXPECT_EQ(value, stated) << group << "." << key;
      }
    }
    // Every key config.json states among those the summary covers is printed.
    for (const char* key : {"vocab_size", "hidden_size", "n_embd", "intermediate_size", "num_hidden_layers", "n_layer",
                            "num_attention_heads", "n_head", "num_key_value_heads", "head_dim", "rms_norm_eps",
                            "layer_norm_epsilon", "max_position_embeddings", "n_positions", "sliding_window",
                            "layer_types", "num_experts", "num_local_experts", "num_experts_per_tok",
                            "moe_intermediate_size", "tie_word_embeddings"}) {
      if (!config.contains(key) || config[key].is_null()) continue;
      bool found = false;
      for (const auto& [group, facts] : j.items())
        if (facts.is_object() && facts.contains(key)) found = found || facts[key] == config[key];
      EXPECT_TRUE(found) << key << " = " << config[key] << " is in config.json but not printed";
    }
    if (j["dims"].contains("head_dim_derived")) {
      const auto& d = j["dims"];
      const int64_t hidden = d.contains("hidden_size") ? d["hidden_size"] : d["n_embd"];
      const int64_t heads = d.contains("num_attention_heads") ? d["num_attention_heads"] : d["n_head"];
      EXPECT_EQ(d["head_dim_derived"], true);
      EXPECT_EQ(d["head_dim"], hidden / heads);
      EXPECT_FALSE(config.contains("head_dim")) << "derived although stated";
    }
    // What is read from the weights matches the tensors listed.
    EXPECT_EQ(j["from_weights"]["qk_norm"], has_tensor(j, "self_attn.q_norm.weight"));
    EXPECT_EQ(j["from_weights"]["lm_head"], has_tensor(j, "lm_head.weight"));
    EXPECT_TRUE(j["config_mismatches"].empty()) << j["config_mismatches"];
  }
}

// The text summary invents no 0 (GPT-2's used to read "hidden 0, ... layers 0, heads 0 ...
// rms_norm_eps 0, rope theta 0 ()"): no fact line has a bare 0 or an empty "()"; GPT-2's dims
// are shown under its own keys with the fixture's values.
TEST(CliInspect, TheTextSummaryInventsNoZeros) {
  for (const std::string fixture : kFixtures) {
    SCOPED_TRACE(fixture);
    const CliRun r = run_lg("inspect " + kShared + "/fixtures/" + fixture);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string summary = r.out.substr(0, r.out.find("\ntensors ("));
    EXPECT_FALSE(std::regex_search(summary, std::regex(R"([ :]0(,|\n|$))"))) << summary;
    EXPECT_EQ(summary.find("()"), std::string::npos) << summary;
  }
  const nlohmann::json gpt2 = config_of("tiny-gpt2");
  const CliRun r = run_lg("inspect " + kShared + "/fixtures/tiny-gpt2");
  for (const char* key : {"n_embd", "n_layer", "n_head", "n_positions"})
    EXPECT_NE(r.out.find(" " + gpt2[key].dump() + " (" + key + ")"), std::string::npos) << key << "\n" << r.out;
  EXPECT_NE(r.out.find("layer_norm_epsilon " + gpt2["layer_norm_epsilon"].dump()), std::string::npos) << r.out;
  // The program's view: gpt2.lg's D and L are n_embd and n_layer.
  EXPECT_NE(r.out.find("D " + gpt2["n_embd"].dump() + ","), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("L " + gpt2["n_layer"].dump() + ","), std::string::npos) << r.out;
}

// Gemma 3's per-layer-type RoPE, its layer_types and window; Qwen3-MoE's experts.
TEST(CliInspect, GemmaRopeAndWindowsAndMoeExpertsAreShown) {
  const nlohmann::json gemma = config_of("tiny-gemma3");
  const CliRun g = run_lg("inspect " + kShared + "/fixtures/tiny-gemma3");
  for (const char* type : {"full_attention", "sliding_attention"})
    EXPECT_NE(g.out.find(std::string("rope_parameters.") + type + ".rope_theta " +
                         gemma["rope_parameters"][type]["rope_theta"].dump()),
              std::string::npos)
        << g.out;
  EXPECT_NE(g.out.find("sliding_window " + gemma["sliding_window"].dump()), std::string::npos) << g.out;
  EXPECT_EQ(g.out.find("use_sliding_window"), std::string::npos) << "not in Gemma 3's config\n" << g.out;
  EXPECT_NE(g.out.find("q/k norm true"), std::string::npos) << g.out;
  const auto gj = nlohmann::json::parse(run_lg("inspect --json " + kShared + "/fixtures/tiny-gemma3").out);
  EXPECT_EQ(gj["sliding_window"]["layer_types"], gemma["layer_types"]);

  const nlohmann::json moe = config_of("tiny-qwen3-moe");
  const CliRun m = run_lg("inspect " + kShared + "/fixtures/tiny-qwen3-moe");
  EXPECT_NE(m.out.find("experts:      num_local_experts " + moe["num_local_experts"].dump() + ", num_experts_per_tok " +
                       moe["num_experts_per_tok"].dump()),
            std::string::npos)
      << m.out;
  EXPECT_NE(m.out.find("q/k norm true"), std::string::npos) << m.out;
}

// --json gives the program's consts as the JSON values they are (numbers, booleans, strings
// without their quotes), not as text: tiny-llama3's eps, its llama3 RoPE type and its biases.
TEST(CliInspect, JsonProgramConstsAreTypedValues) {
  const nlohmann::json llama = config_of("tiny-llama3");
  const CliRun r = run_lg("inspect --json " + kShared + "/fixtures/tiny-llama3");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("program_consts");
  EXPECT_TRUE(c.at("eps").is_number()) << c;
  EXPECT_DOUBLE_EQ(c.at("eps").get<double>(), llama["rms_norm_eps"].get<double>());
  EXPECT_EQ(c.at("rope_type"), "llama3") << c;
  EXPECT_EQ(c.at("attn_bias"), false) << c;
  EXPECT_TRUE(j.at("program_dims").at("D").is_number_integer()) << j.at("program_dims");
}

// The parameters' count and bytes go under the same keys for a model directory as for a
// config-only one (below): a new-user pass found "bytes" here and "parameter_bytes" there. The
// bytes are the tensors' own, element count times dtype size.
TEST(CliInspect, ModelDirectoryGivesParameterBytesUnderTheConfigOnlyKey) {
  const CliRun r = run_lg("inspect --json " + kShared + "/fixtures/tiny-qwen3");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.contains("bytes")) << r.out.substr(0, 2000);
  int64_t count = 0, bytes = 0;
  for (const auto& t : j.at("tensors")) {
    int64_t n = 1;
    for (const auto& d : t.at("shape")) n *= d.get<int64_t>();
    const std::string dtype = t.at("dtype");
    const int64_t size = dtype == "f32" || dtype == "float32" ? 4 : dtype == "bf16" || dtype == "f16" ? 2 : 0;
    ASSERT_NE(size, 0) << "a dtype this test does not size: " << dtype;
    count += n;
    bytes += n * size;
  }
  EXPECT_EQ(j.at("parameters"), count);
  EXPECT_EQ(j.at("parameter_bytes"), bytes);
}

// A config.json beside weights lanegraph does not read (a PyTorch pickle) is still described from
// its config, and the weights line names the file and how to convert it, as lg run's error does;
// it said "a config alone (lg bench --shape runs it on random weights)".
TEST(CliInspect, ConfigBesideAPickleNamesThePickle) {
  const auto dir = std::filesystem::temp_directory_path() / "lg_inspect_pickle";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kSource + "/bench/shapes/llama-3.1-8b/config.json", dir / "config.json");
  std::ofstream(dir / "pytorch_model.bin") << "x";
  const CliRun r = run_lg("inspect " + dir.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("weights:      none: no *.safetensors in this directory: pytorch_model.bin holds PyTorch "
                       "weights (a pickle); lanegraph reads safetensors only"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("a config alone"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// phi3.lg binds only where config.sliding_window covers the context (Phi-3-mini-4k: a window of
// 2047 positions of its 4096) and asks for --max-seq at most the window, at which lg run, serve
// and batch lower it. lg inspect lowered it at the config's context only and exited 1 with "does
// not check against config.json", for a model that runs. It now names the largest --max-seq that
// checks (the window) and shows the program there, exit 0; the JSON has it as program_max_seq
// (null where the config's context checks).
TEST(CliInspect, AProgramThatBindsOnlyBelowTheConfigsContextNamesTheMaxSeqItNeeds) {
  test::ModelCopy phi3(kShared + "/fixtures/tiny-phi3");
  phi3.edit_json("config.json", [](nlohmann::json& j) { j["sliding_window"] = 512; });
  const CliRun text = run_lg("inspect " + phi3.dir.string());
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("its length: checks at --max-seq up to 512, not at config.json's context of " +
                          config_of("tiny-phi3")["max_position_embeddings"].dump() +
                          ": lg run, serve and batch need --max-seq 512 or less"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("does not check"), std::string::npos) << text.out;
  const CliRun json = run_lg("inspect --json " + phi3.dir.string());
  ASSERT_EQ(json.code, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("program_max_seq"), 512);
  EXPECT_EQ(j.at("program_dims").at("S"), 512) << j.at("program_dims");
  const auto plain = nlohmann::json::parse(run_lg("inspect --json " + kShared + "/fixtures/tiny-phi3").out);
  EXPECT_TRUE(plain.at("program_max_seq").is_null());
}

// Gemma3TextConfig defaults an absent head_dim to 256: inspect showed hidden / heads "derived".
TEST(CliInspect, Gemma3WithoutHeadDimShowsItsConfigClassDefault) {
  const auto dir = std::filesystem::temp_directory_path() / "lg_inspect_gemma3_head_dim";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json config = config_of("tiny-gemma3");
  config.erase("head_dim");
  std::ofstream(dir / "config.json") << config.dump();
  const CliRun r = run_lg("inspect --json " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dims"]["head_dim"], 256) << j["dims"];  // not 64 / 4
  EXPECT_EQ(j["dims"]["head_dim_derived"], true);
  std::filesystem::remove_all(dir);
}

// Sizes whose counts pass 2^64 (each within the 2^40 a config field may hold): the count was
// printed wrapped (mod 2^64) and the saturated decode bytes as a size; both say they overflow,
// and the JSON holds null rather than a wrong number.
TEST(CliInspect, CountsPast64BitsSaySoRatherThanWrap) {
  const auto dir = std::filesystem::temp_directory_path() / "lg_inspect_past_2_64";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json config = config_of("tiny-qwen3");
  config["hidden_size"] = int64_t{1} << 40;
  config["vocab_size"] = int64_t{1} << 40;  // the embedding alone holds 2^80 elements
  std::ofstream(dir / "config.json") << config.dump();
  const CliRun r = run_lg("inspect " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("parameters:   2^64 or more (the config's sizes overflow)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode bytes: 2^64 or more (the config's sizes overflow)\n"), std::string::npos) << r.out;
  const CliRun js = run_lg("inspect --json " + dir.string());
  ASSERT_EQ(js.code, 0) << js.out;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_TRUE(j["parameters"].is_null()) << j["parameters"];
  EXPECT_TRUE(j["parameter_bytes"].is_null()) << j["parameter_bytes"];
  EXPECT_TRUE(j["decode_weight_bytes"].is_null()) << j["decode_weight_bytes"];
  std::filesystem::remove_all(dir);
}

// A directory with a config.json and no weights (bench/shapes/*, lg bench --shape's input) is
// described from its config and program, saying there are no weights, instead of being refused for
// lacking model.safetensors. Llama 3.1 8B's count is checked against its published 8,030,261,248
// and recomputed from the config; a decode token reads every bf16 weight but the embedding table
// (gathered, one row) and the norms.
TEST(CliInspect, ConfigOnlyDirectoryIsDescribedFromItsConfig) {
  const std::string dir = kSource + "/bench/shapes/llama-3.1-8b";
  const CliRun r = run_lg("inspect " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("architecture: LlamaForCausalLM (llama)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dims:         vocab 128256, hidden 4096, intermediate 14336, layers 32, heads 32, kv heads 8"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("weights:      none: no *.safetensors in this directory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:   8030261248 (the program's params at this config; 16060522496 bytes"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("program:      " + kSource + "/models/llama.lg"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tensors ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("from weights"), std::string::npos) << "no tensors to read attention details from\n" << r.out;

  const CliRun js = run_lg("inspect --json " + dir);
  ASSERT_EQ(js.code, 0) << js.out;
  const auto j = nlohmann::json::parse(js.out);
  std::ifstream in(dir + "/config.json");
  const auto c = nlohmann::json::parse(in);
  const int64_t V = c["vocab_size"], D = c["hidden_size"], F = c["intermediate_size"], L = c["num_hidden_layers"];
  const int64_t H = c["num_attention_heads"], KV = c["num_key_value_heads"], Dh = D / H;
  const int64_t norms = L * 2 * D + D;
  const int64_t params = 2 * V * D + L * (2 * D * H * Dh + 2 * D * KV * Dh + 3 * D * F) + norms;
  EXPECT_EQ(params, 8030261248);
  EXPECT_EQ(j["parameters"], params);
  EXPECT_EQ(j["parameter_bytes"], 2 * params);  // bf16
  EXPECT_EQ(j["decode_weight_bytes"], 2 * (params - V * D - norms));
  EXPECT_TRUE(j["weights"].is_null());
  EXPECT_FALSE(j.contains("tensors"));
  EXPECT_EQ(j["dims"]["num_key_value_heads"], KV);
  EXPECT_EQ(j["eos_token_ids"], nlohmann::json::array({c["eos_token_id"]}));

  // A mixture of experts: all experts are parameters; a decode token reads 8 of 128.
  const CliRun moe = run_lg("inspect --json " + kSource + "/bench/shapes/qwen3-30b-a3b");
  ASSERT_EQ(moe.code, 0) << moe.out;
  const auto m = nlohmann::json::parse(moe.out);
  EXPECT_EQ(m["experts"]["num_experts"], 128);
  EXPECT_GT(m["parameters"].get<int64_t>(), 30'000'000'000);
  EXPECT_LT(m["decode_weight_bytes"].get<int64_t>(), m["parameter_bytes"].get<int64_t>() / 8);

  // Nothing to hash or scan: an error naming the flag and the directory.
  const CliRun hash = run_lg("inspect --hash " + dir);
  EXPECT_EQ(hash.code, 1) << hash.out;
  EXPECT_NE(hash.out.find("lg: error: " + dir + ": --hash has no weights to hash"), std::string::npos) << hash.out;
}

}  // namespace
}  // namespace lg::cli_test
