// `lg inspect DIR`: what a Hugging Face model directory holds, as lanegraph reads it: the
// architecture and dims from config.json, the checkpoint's parameter count and bytes, and every
// tensor with its dtype and shape, from the headers alone (an 8B checkpoint lists at once);
// `--hash` adds the weights hash, which reads every weight. `--json` prints the same as one JSON object.
// It also checks the tensors against the params of the model's .lg program for this config, and with `--check` scans
// every weight for NaN/Inf; either finding is printed as `lg: error: ...` and exits 1.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "model/model_dir.h"
#include "model/weight_checks.h"
#include "runtime/bind_params.h"
#include "runtime/forward_graph.h"
#include "support/error.h"

namespace {

using lg::model::ModelDir;

nlohmann::ordered_json to_json(const ModelDir& m, bool hash) {
  const auto& c = m.config;
  nlohmann::ordered_json j;
  j["dir"] = m.dir.string();
  j["model_type"] = c.model_type;
  j["architectures"] = c.architectures;
  j["dims"] = {{"vocab_size", c.vocab_size},
               {"hidden_size", c.hidden_size},
               {"intermediate_size", c.intermediate_size},
               {"num_hidden_layers", c.num_hidden_layers},
               {"num_attention_heads", c.num_attention_heads},
               {"num_key_value_heads", c.num_key_value_heads},
               {"head_dim", c.head_dim},
               {"head_dim_derived", c.head_dim_derived}};
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope"] = {{"theta", c.rope_theta}, {"theta_field", c.rope_theta_field}, {"type", c.rope_type}};
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["qkv_bias"] = c.qkv_bias;
  j["o_bias"] = c.o_bias;
  j["qk_norm"] = c.qk_norm;
  j["config_dtype"] = c.dtype_name;
  j["sliding_window"] = {{"use_sliding_window", c.use_sliding_window},
                         {"sliding_window", c.sliding_window ? nlohmann::ordered_json(*c.sliding_window) : nullptr},
                         {"max_window_layers",
                          c.max_window_layers ? nlohmann::ordered_json(*c.max_window_layers) : nullptr}};
  j["eos_token_ids"] = m.generation.eos_token_ids;
  j["bos_token_id"] = m.generation.bos_token_id ? nlohmann::ordered_json(*m.generation.bos_token_id) : nullptr;
  j["parameters"] = m.checkpoint.parameter_count();
  j["bytes"] = m.checkpoint.byte_size();
  j["weights_hash"] = hash ? nlohmann::ordered_json(m.checkpoint.weights_hash()) : nullptr;
  std::vector<std::string> files;
  for (auto& f : m.checkpoint.files()) files.push_back(f.source());
  j["files"] = files;
  j["tokenizer_json"] = m.tokenizer_json ? nlohmann::ordered_json(m.tokenizer_json->string()) : nullptr;
  auto& tensors = j["tensors"] = nlohmann::ordered_json::array();
  for (auto& name : m.checkpoint.names()) {
    const auto& t = m.checkpoint.info(name);
    tensors.push_back({{"name", name}, {"dtype", lg::dtype_name(t.dtype)}, {"shape", t.shape}});
  }
  return j;
}

void print_text(const ModelDir& m, bool hash) {
  const auto& c = m.config;
  std::map<std::string, uint64_t> by_dtype;  // bytes per dtype: a checkpoint may mix them
  for (auto& name : m.checkpoint.names()) {
    const auto& t = m.checkpoint.info(name);
    by_dtype[std::string(lg::dtype_name(t.dtype))] += t.nbytes;
  }
  std::vector<std::string> dtypes;
  for (auto& [d, b] : by_dtype) dtypes.push_back(fmt::format("{} ({} bytes)", d, b));
  fmt::print("model:        {}\n", m.dir.string());
  fmt::print("architecture: {} ({})\n", fmt::join(c.architectures, ", "), c.model_type);
  fmt::print("dims:         vocab {}, hidden {}, intermediate {}, layers {}, heads {}, kv heads {}, head_dim {}{}\n",
             c.vocab_size, c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
             c.num_key_value_heads, c.head_dim, c.head_dim_derived ? " (derived: hidden / heads)" : "");
  // The decoder fields are 0 where config.json names them otherwise (GPT-2's n_embd, n_head):
  // the program reads those, and `program:` below says which one.
  if (c.num_key_value_heads > 0)
    fmt::print("attention:    {} q/kv = {}, qkv bias {}, o bias {}, qk-norm {}\n",
               c.num_key_value_heads == c.num_attention_heads ? "MHA" : "GQA",
               c.num_attention_heads / c.num_key_value_heads, c.qkv_bias, c.o_bias, c.qk_norm);
  fmt::print("norm / rope:  rms_norm_eps {}, rope theta {} ({}), rope type {}, max positions {}\n", c.rms_norm_eps,
             c.rope_theta, c.rope_theta_field, c.rope_type, c.max_position_embeddings);
  fmt::print("sliding:      use_sliding_window {}, sliding_window {}, max_window_layers {}\n", c.use_sliding_window,
             c.sliding_window ? fmt::format("{}", *c.sliding_window) : "null",
             c.max_window_layers ? fmt::format("{}", *c.max_window_layers) : "null");
  fmt::print("embeddings:   {}\n", c.tie_word_embeddings ? "tied (lm_head = embed_tokens)" : "untied (lm_head.weight)");
  fmt::print("dtype:        config {}, stored {}\n", c.dtype_name.empty() ? "(unset)" : c.dtype_name,
             fmt::join(dtypes, ", "));
  fmt::print("tokens:       eos [{}], bos {}\n", fmt::join(m.generation.eos_token_ids, ", "),
             m.generation.bos_token_id ? fmt::format("{}", *m.generation.bos_token_id) : "none");
  fmt::print("parameters:   {} ({} bytes in {} file{})\n", m.checkpoint.parameter_count(), m.checkpoint.byte_size(),
             m.checkpoint.files().size(), m.checkpoint.files().size() == 1 ? "" : "s");
  fmt::print("weights hash: {}\n", hash ? m.checkpoint.weights_hash() : "(--hash: reads every weight once)");
  fmt::print("tokenizer:    {}\n", m.tokenizer_json ? m.tokenizer_json->string() : "(no tokenizer.json)");
  fmt::print("tensors ({}):\n", m.checkpoint.names().size());
  for (auto& name : m.checkpoint.names()) {
    const auto& t = m.checkpoint.info(name);
    fmt::print("  {:<56} {:<5} [{}]\n", name, lg::dtype_name(t.dtype), fmt::join(t.shape, ", "));
  }
}

}  // namespace

LG_COMMAND("inspect", [](CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "Show a Hugging Face model directory: config, dims, tensors");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<bool>(false);
  auto hash = std::make_shared<bool>(false);
  sub->add_option("dir", *dir, "model directory (config.json + safetensors)")->required();
  sub->add_flag("--json", *json, "print one JSON object instead of text");
  sub->add_flag("--check", *check, "also scan every weight for NaN/Inf (reads the whole checkpoint once)");
  sub->add_flag("--hash", *hash, "also print the weights hash a lock is tied to (reads every weight once); "
                                 "without it only the headers are read");
  return [dir, json, check, hash]() {
    const ModelDir m = ModelDir::open(*dir);
    // The shapes config.json implies are what the model's program declares for it: lowered
    // (no weight bytes read) and its params compared with the tensors.
    std::vector<std::string> mismatches;
    std::string program_note;
    try {
      const auto fg = lg::runtime::forward_graph(m.config, 0, lg::runtime::program_source(m));
      mismatches = lg::runtime::param_problems(fg.graph, m.checkpoint);
      program_note = fg.source.string();
    } catch (const lg::Error& e) {
      program_note = std::string("(none: ") + e.what() + ")";
    }
    std::vector<lg::model::NonFiniteTensor> bad;
    if (*check) bad = lg::model::find_non_finite(m.checkpoint);
    if (*json) {
      auto j = to_json(m, *hash);
      j["program"] = program_note;
      j["config_mismatches"] = mismatches;
      if (*check) {
        auto& nf = j["non_finite"] = nlohmann::ordered_json::array();
        for (const auto& t : bad) nf.push_back({{"name", t.name}, {"nan", t.nan}, {"inf", t.inf}, {"first_index", t.first_index}});
      }
      std::cout << j.dump(2) << "\n";
    } else {
      print_text(m, *hash);
      fmt::print("program:      {}\n", program_note);
      if (*check && bad.empty()) fmt::print("weights:      all finite (--check)\n");
    }
    std::cout.flush();
    std::fflush(stdout);
    for (const auto& s : mismatches) std::cerr << "lg: error: " << m.dir.string() << ": " << s << "\n";
    for (const auto& t : bad)
      std::cerr << fmt::format("lg: error: {}: tensor {} has {} NaN and {} Inf values (first at flat index {}): the "
                               "forward would give non-finite logits\n",
                               m.dir.string(), t.name, t.nan, t.inf, t.first_index);
    return mismatches.empty() && bad.empty() ? 0 : 1;
  };
});
