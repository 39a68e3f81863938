// `lg inspect` on every family's fixture states only what config.json states: each config fact
// it prints is the file's value under the file's key (GPT-2's n_embd, not a hidden_size of 0),
// each such key the file has is printed, and the attention details it takes from the weights
// (q/k norm, a separate LM head) match the tensors listed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_run.h"

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

}  // namespace
}  // namespace lg::cli_test
