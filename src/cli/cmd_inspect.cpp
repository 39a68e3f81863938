// `lg inspect DIR`: what a Hugging Face model directory holds, as lanegraph reads it: the
// architecture and the facts config.json states (only those it states, under their own names:
// GPT-2's n_embd; MoE and sliding-window fields where present), attention details read from the
// tensors present, the .lg program's dims and consts for this config, the checkpoint's parameter count and bytes, and every
// tensor with its dtype and shape, from the headers alone (an 8B checkpoint lists at once);
// `--hash` adds the weights hash, which reads every weight. `--json` prints the same as one JSON object.
// It also checks the tensors against the params of the model's .lg program for this config, and with `--check` scans
// every weight for NaN/Inf; either finding, or a program that does not check against the config, is printed as
// `lg: error: ...` and exits 1.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "ir/verify.h"
#include "lang/lower.h"
#include "model/model_dir.h"
#include "model/weight_checks.h"
#include "runtime/bind_params.h"
#include "runtime/forward_graph.h"  // program_source
#include "support/error.h"

namespace {

using lg::model::ModelDir;
using Json = nlohmann::ordered_json;

/// One fact of the summary: `label value` in the text, `key: value` in the JSON. `key` is the
/// config key it was read from (its own name: GPT-2's n_embd, not hidden_size) or, for what
/// is derived, a name saying so.
struct Fact {
  std::string label;
  std::string key;
  Json value;
  std::string note;  ///< text only: "(n_embd)", "(derived: hidden / heads)"
};

/// A line of the summary (`label:` then its facts); a group with no facts is not printed.
struct Group {
  std::string label;  ///< text: "dims"
  std::string key;    ///< JSON: "dims"
  std::vector<Fact> facts;
};

/// config.json's value at `key` when the file has it and it is not null: what a config states.
const nlohmann::json* stated(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

/// The first of `keys` the config states, as a fact labelled `label`; the key is named in the
/// text when it is not the first (the usual decoder name), so GPT-2's reads "hidden 64 (n_embd)".
void add_first(Group& g, const nlohmann::json& j, const std::string& label, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (const auto* v = stated(j, k)) {
      g.facts.push_back({label, k, Json(*v), std::string(k) == *keys.begin() ? "" : fmt::format("({})", k)});
      return;
    }
  }
}

/// Each of `keys` the config states, labelled by its own name.
void add_each(Group& g, const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (const auto* v = stated(j, k)) g.facts.push_back({k, k, Json(*v), ""});
}

const Fact* fact(const Group& g, const std::string& key) {
  for (const auto& f : g.facts)
    if (f.key == key) return &f;
  return nullptr;
}

bool any_tensor(const ModelDir& m, std::initializer_list<const char*> suffixes) {
  for (const auto& name : m.checkpoint.names())
    for (const char* s : suffixes)
      if (name.size() >= std::strlen(s) && name.compare(name.size() - std::strlen(s), std::string::npos, s) == 0) return true;
  return false;
}

// RoPE as config.json writes it: top-level rope_theta / rope_scaling (older files), or
// rope_parameters, one set or (Gemma 3) one per layer type.
void add_rope(Group& g, const nlohmann::json& j) {
  auto add_set = [&](const nlohmann::json& set, const std::string& prefix) {
    for (const char* k : {"rope_theta", "rope_type", "factor"})
      if (const auto* v = stated(set, k)) g.facts.push_back({prefix + k, prefix + k, Json(*v), ""});
  };
  add_each(g, j, {"rope_theta"});
  if (const auto* rs = stated(j, "rope_scaling"); rs && rs->is_object()) add_set(*rs, "rope_scaling.");
  const auto* rp = stated(j, "rope_parameters");
  if (!rp || !rp->is_object()) return;
  add_set(*rp, "rope_parameters.");
  for (const auto& [type, set] : rp->items())
    if (set.is_object()) add_set(set, "rope_parameters." + type + ".");
}

/// What config.json states, grouped as the summary prints it: a key the file lacks (or writes
/// null) is left out rather than shown as 0 or false, and what is derived says so. Attention
/// details that transformers' classes fix per family (q/k norm, biases, a separate LM head) are
/// read from the tensors present, not from any family's default.
std::vector<Group> facts(const ModelDir& m) {
  const nlohmann::json& j = m.config.raw;
  Group dims{"dims", "dims", {}};
  add_first(dims, j, "vocab", {"vocab_size"});
  add_first(dims, j, "hidden", {"hidden_size", "n_embd"});
  add_first(dims, j, "intermediate", {"intermediate_size", "n_inner"});
  add_first(dims, j, "layers", {"num_hidden_layers", "n_layer"});
  add_first(dims, j, "heads", {"num_attention_heads", "n_head"});
  add_first(dims, j, "kv heads", {"num_key_value_heads"});
  add_first(dims, j, "head_dim", {"head_dim"});
  auto first_of = [&](std::initializer_list<const char*> keys) -> const Fact* {
    for (const char* k : keys)
      if (const Fact* f = fact(dims, k)) return f;
    return nullptr;
  };
  const Fact* hidden = first_of({"hidden_size", "n_embd"});
  const Fact* heads = first_of({"num_attention_heads", "n_head"});
  if (!fact(dims, "head_dim") && hidden && heads && hidden->value.is_number_integer() && heads->value.is_number_integer() &&
      heads->value.get<int64_t>() > 0 && hidden->value.get<int64_t>() % heads->value.get<int64_t>() == 0)
    dims.facts.push_back({"head_dim", "head_dim", hidden->value.get<int64_t>() / heads->value.get<int64_t>(),
                          "(derived: hidden / heads)"});

  Group experts{"experts", "experts", {}};
  if (lg::model::num_experts(m.config) > 0)
    add_each(experts, j, {"num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                          "shared_expert_intermediate_size", "decoder_sparse_step", "norm_topk_prob", "mlp_only_layers"});

  Group attention{"attention", "attention", {}};
  const Fact* kv = fact(dims, "num_key_value_heads");
  if (heads && kv && heads->value.is_number_integer() && kv->value.is_number_integer() && kv->value.get<int64_t>() > 0) {
    const int64_t h = heads->value.get<int64_t>(), k = kv->value.get<int64_t>();
    attention.facts.push_back({h == k ? "MHA" : "GQA", "q_per_kv", h / k, h == k ? "" : "q/kv"});
  }
  add_each(attention, j, {"attention_bias", "query_pre_attn_scalar", "attn_logit_softcapping"});

  Group weights{"from weights", "from_weights", {}};
  weights.facts.push_back({"q/k/v bias", "qkv_bias",
                           any_tensor(m, {"q_proj.bias", "k_proj.bias", "v_proj.bias", "qkv_proj.bias", "attn.c_attn.bias"}), ""});
  weights.facts.push_back({"o bias", "o_bias", any_tensor(m, {"o_proj.bias", "attn.c_proj.bias"}), ""});
  weights.facts.push_back({"q/k norm", "qk_norm", any_tensor(m, {"q_norm.weight", "k_norm.weight"}), ""});
  weights.facts.push_back({"lm_head.weight", "lm_head", any_tensor(m, {"lm_head.weight"}), ""});

  Group norm{"norm / rope", "norm_rope", {}};
  add_each(norm, j, {"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "hidden_act", "hidden_activation",
                     "activation_function"});
  add_rope(norm, j);
  add_first(norm, j, "max positions", {"max_position_embeddings", "n_positions"});

  Group sliding{"sliding", "sliding_window", {}};
  add_each(sliding, j, {"use_sliding_window", "sliding_window", "max_window_layers", "sliding_window_pattern",
                        "_sliding_window_pattern"});
  if (const auto* lt = stated(j, "layer_types"); lt && lt->is_array()) {
    std::vector<std::pair<std::string, int>> counts;  // in first-seen order
    for (const auto& e : *lt) {
      const std::string t = e.is_string() ? e.get<std::string>() : e.dump();
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == t; });
      if (it == counts.end()) counts.emplace_back(t, 1);
      else ++it->second;
    }
    std::vector<std::string> parts;
    for (const auto& [t, n] : counts) parts.push_back(fmt::format("{} x{}", t, n));
    sliding.facts.push_back({"layer_types", "layer_types", Json(*lt), fmt::format("{}", fmt::join(parts, ", "))});
  }

  Group embeddings{"embeddings", "embeddings", {}};
  add_each(embeddings, j, {"tie_word_embeddings"});
  return {dims, experts, attention, weights, norm, sliding, embeddings};
}

std::string render(const Fact& f) {
  if (f.key == "layer_types") return f.label + " " + f.note;  // the list is summarized by type
  std::string v;
  if (f.value.is_string()) v = f.value.get<std::string>();
  else v = f.value.dump();
  if (f.key == "q_per_kv") return f.value.get<int64_t>() == 1 ? "MHA" : fmt::format("GQA q/kv = {}", v);
  if (f.key == "lm_head") return f.value.get<bool>() ? "lm_head.weight present" : "no lm_head.weight (the LM head is the embedding)";
  return f.note.empty() ? f.label + " " + v : f.label + " " + v + " " + f.note;
}

Json to_json(const ModelDir& m, bool hash) {
  const auto& c = m.config;
  Json j;
  j["dir"] = m.dir.string();
  j["model_type"] = c.model_type;
  j["architectures"] = c.architectures;
  for (const auto& g : facts(m)) {
    if (g.facts.empty()) continue;
    auto& o = j[g.key] = Json::object();
    for (const auto& f : g.facts) {
      o[f.key] = f.value;
      if (f.note.rfind("(derived", 0) == 0) o[f.key + "_derived"] = true;  // not stated by config.json
    }
  }
  j["config_dtype"] = c.dtype_name.empty() ? Json(nullptr) : Json(c.dtype_name);
  j["eos_token_ids"] = m.generation.eos_token_ids;
  j["bos_token_id"] = m.generation.bos_token_id ? Json(*m.generation.bos_token_id) : nullptr;
  j["parameters"] = m.checkpoint.parameter_count();
  j["bytes"] = m.checkpoint.byte_size();
  j["weights_hash"] = hash ? Json(m.checkpoint.weights_hash()) : nullptr;
  std::vector<std::string> files;
  for (auto& f : m.checkpoint.files()) files.push_back(f.source());
  j["files"] = files;
  j["tokenizer_json"] = m.tokenizer_json ? Json(m.tokenizer_json->string()) : nullptr;
  auto& tensors = j["tensors"] = Json::array();
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
  fmt::print("architecture: {}{}\n", c.architectures.empty() ? "" : fmt::format("{} ", fmt::join(c.architectures, ", ")),
             fmt::format("({})", c.model_type));
  for (const auto& g : facts(m)) {
    if (g.facts.empty()) continue;
    std::vector<std::string> parts;
    for (const auto& f : g.facts) parts.push_back(render(f));
    fmt::print("{:<14}{}\n", g.label + ":", fmt::join(parts, ", "));
  }
  fmt::print("dtype:        {}stored {}\n", c.dtype_name.empty() ? "" : fmt::format("config {}, ", c.dtype_name),
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

std::string named_list(const std::vector<lg::lang::CheckReport::Named>& v) {
  std::vector<std::string> parts;
  for (const auto& n : v) parts.push_back(n.name + " " + n.value);
  return fmt::format("{}", fmt::join(parts, ", "));
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
    // The program's report is its view of the config: its dims and consts under its own names.
    std::vector<std::string> mismatches;
    std::string program_note;
    std::optional<lg::lang::CheckReport> report;
    // An architecture no program covers is still inspected (exit 0: the summary is what was
    // asked for); a program that exists and fails its checks is an error, as `lg check` says.
    std::optional<std::filesystem::path> source;
    std::string program_error;
    try {
      source = lg::runtime::program_source(m);
      report = lg::lang::check_file(*source, m.config.raw, {});
      lg::ir::verify(report->graph);
      mismatches = lg::runtime::param_problems(report->graph, m.checkpoint);
      program_note = source->string();
    } catch (const lg::Error& e) {
      report.reset();
      program_note = std::string("(none: ") + e.what() + ")";
      if (source)
        program_error = fmt::format("{}: its program {} does not check against config.json", m.dir.string(), source->string());
    }
    std::vector<lg::model::NonFiniteTensor> bad;
    if (*check) bad = lg::model::find_non_finite(m.checkpoint);
    if (*json) {
      auto j = to_json(m, *hash);
      j["program"] = program_note;
      if (report) {
        for (const auto& [key, list] : {std::pair{"program_dims", &report->dims}, std::pair{"program_consts", &report->consts}}) {
          auto& o = j[key] = Json::object();
          for (const auto& n : *list) {
            const bool integer = !n.value.empty() && n.value.find_first_not_of("0123456789") == std::string::npos;
            o[n.name] = integer && n.value.size() < 19 ? Json(std::stoll(n.value)) : Json(n.value);
          }
        }
      }
      j["config_mismatches"] = mismatches;
      if (*check) {
        auto& nf = j["non_finite"] = nlohmann::ordered_json::array();
        for (const auto& t : bad) nf.push_back({{"name", t.name}, {"nan", t.nan}, {"inf", t.inf}, {"first_index", t.first_index}});
      }
      std::cout << j.dump(2) << "\n";
    } else {
      print_text(m, *hash);
      fmt::print("program:      {}\n", program_note);
      if (report) {
        fmt::print("  its dims:   {}\n", named_list(report->dims));
        if (!report->consts.empty()) fmt::print("  its consts: {}\n", named_list(report->consts));
      }
      if (*check && bad.empty()) fmt::print("weights:      all finite (--check)\n");
    }
    std::cout.flush();
    std::fflush(stdout);
    if (!program_error.empty()) std::cerr << "lg: error: " << program_error << "\n";
    for (const auto& s : mismatches) std::cerr << "lg: error: " << m.dir.string() << ": " << s << "\n";
    for (const auto& t : bad)
      std::cerr << fmt::format("lg: error: {}: tensor {} has {} NaN and {} Inf values (first at flat index {}): the "
                               "forward would give non-finite logits\n",
                               m.dir.string(), t.name, t.nan, t.inf, t.first_index);
    return program_error.empty() && mismatches.empty() && bad.empty() ? 0 : 1;
  };
});
