// `lg inspect DIR`: what a Hugging Face model directory holds, as lanegraph reads it: the
// architecture and the facts config.json states (only those it states, under their own names:
// GPT-2's n_embd; MoE and sliding-window fields where present), the eos ids generation stops on
// (the configs' and the tokenizer's), attention details read from the
// tensors present, the .lg program's dims and consts for this config, the checkpoint's parameter count and bytes, and every
// tensor with its dtype and shape, from the headers alone (an 8B checkpoint lists at once);
// `--hash` adds the weights hash, which reads every weight. `--json` prints the same as one JSON object.
// It also checks the tensors against the params of the model's .lg program for this config (`--program FILE.lg` in
// place of the <model_type>.lg lg run would find, as lg run takes it), and with `--check` scans
// every weight for NaN/Inf; either finding, or a program that does not check against the config, is printed as
// `lg: error: ...` and exits 1. A directory with a config.json and no weights (a shape, bench/shapes/*) gets what
// the config and its program give: the facts, the program's parameter count and bytes, and the bf16 bytes a
// decode token reads (lg bench --shape's floor), with a line saying there are no weights.
#include <algorithm>
#include <cstdint>
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
#include "cli/lane_options.h"
#include "cli/path_checks.h"
#include "ir/verify.h"
#include "lang/lower.h"
#include "model/model_dir.h"
#include "model/weight_checks.h"
#include "runtime/bind_params.h"
#include "runtime/model_source.h"
#include "support/dtype.h"
#include "support/error.h"
#include "tokenizer/model_fit.h"
#include "tokenizer/tokenizer.h"

namespace {

using lg::model::ModelDir;
using Json = nlohmann::ordered_json;

/// Adds the tokenizer's eos token to the ids shown, as lg run, serve and batch stop on it, and
/// warns where the tokenizer does not fit the checkpoint (tokenizer/model_fit.h). The
/// summary does not need the tokenizer otherwise: one lanegraph cannot read is a warning here
/// (lg run names the same error), and the ids of the two configs are shown.
void add_tokenizer_eos(lg::model::GenerationConfig& generation, const std::optional<std::filesystem::path>& tokenizer,
                       int64_t model_vocab) {
  if (!tokenizer) return;
  try {
    const auto tok = lg::tokenizer::Tokenizer::from_file(*tokenizer);
    lg::tokenizer::warn_model_fit(tok, *tokenizer, model_vocab);
    lg::model::add_eos_token_id(generation, tok.eos_id());
  } catch (const lg::Error& e) {
    fmt::print(stderr, "lg: warning: {} (the eos ids shown are config.json's and generation_config.json's only)\n",
               e.what());
  }
}

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

bool any_tensor(const lg::model::Checkpoint& weights, std::initializer_list<const char*> suffixes) {
  for (const auto& name : weights.names())
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
/// read from the tensors present, not from any family's default: without `weights` (a shape
/// directory) they are not given at all.
std::vector<Group> facts(const lg::model::ModelConfig& config, const lg::model::Checkpoint* weights) {
  const nlohmann::json& j = config.raw;
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
  // Gemma3TextConfig defaults an absent head_dim to 256, not hidden / heads (ModelConfig reads it so).
  if (!fact(dims, "head_dim") && config.model_type == "gemma3_text" && config.head_dim > 0)
    dims.facts.push_back({"head_dim", "head_dim", config.head_dim, "(derived: Gemma3TextConfig's default)"});
  if (!fact(dims, "head_dim") && hidden && heads && hidden->value.is_number_integer() && heads->value.is_number_integer() &&
      heads->value.get<int64_t>() > 0 && hidden->value.get<int64_t>() % heads->value.get<int64_t>() == 0)
    dims.facts.push_back({"head_dim", "head_dim", hidden->value.get<int64_t>() / heads->value.get<int64_t>(),
                          "(derived: hidden / heads)"});

  Group experts{"experts", "experts", {}};
  if (lg::model::num_experts(config) > 0)
    add_each(experts, j, {"num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                          "shared_expert_intermediate_size", "decoder_sparse_step", "norm_topk_prob", "mlp_only_layers"});

  Group attention{"attention", "attention", {}};
  const Fact* kv = fact(dims, "num_key_value_heads");
  if (heads && kv && heads->value.is_number_integer() && kv->value.is_number_integer() && kv->value.get<int64_t>() > 0) {
    const int64_t h = heads->value.get<int64_t>(), k = kv->value.get<int64_t>();
    attention.facts.push_back({h == k ? "MHA" : "GQA", "q_per_kv", h / k, h == k ? "" : "q/kv"});
  }
  add_each(attention, j, {"attention_bias", "query_pre_attn_scalar", "attn_logit_softcapping"});

  Group from_weights{"from weights", "from_weights", {}};
  if (weights) {
    auto& f = from_weights.facts;
    f.push_back({"q/k/v bias", "qkv_bias",
                 any_tensor(*weights, {"q_proj.bias", "k_proj.bias", "v_proj.bias", "qkv_proj.bias", "attn.c_attn.bias"}), ""});
    f.push_back({"o bias", "o_bias", any_tensor(*weights, {"o_proj.bias", "attn.c_proj.bias"}), ""});
    f.push_back({"q/k norm", "qk_norm", any_tensor(*weights, {"q_norm.weight", "k_norm.weight"}), ""});
    f.push_back({"lm_head.weight", "lm_head", any_tensor(*weights, {"lm_head.weight"}), ""});
  }

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
  return {dims, experts, attention, from_weights, norm, sliding, embeddings};
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

/// The groups with facts, as JSON objects under their keys.
void add_facts(Json& j, const std::vector<Group>& groups) {
  for (const auto& g : groups) {
    if (g.facts.empty()) continue;
    auto& o = j[g.key] = Json::object();
    for (const auto& f : g.facts) {
      o[f.key] = f.value;
      if (f.note.rfind("(derived", 0) == 0) o[f.key + "_derived"] = true;  // not stated by config.json
    }
  }
}

/// The `model:`, `architecture:` and fact lines both summaries start with.
void print_head(const std::filesystem::path& dir, const lg::model::ModelConfig& c, const std::vector<Group>& groups) {
  fmt::print("model:        {}\n", dir.string());
  fmt::print("architecture: {}{}\n", c.architectures.empty() ? "" : fmt::format("{} ", fmt::join(c.architectures, ", ")),
             fmt::format("({})", c.model_type));
  for (const auto& g : groups) {
    if (g.facts.empty()) continue;
    std::vector<std::string> parts;
    for (const auto& f : g.facts) parts.push_back(render(f));
    fmt::print("{:<14}{}\n", g.label + ":", fmt::join(parts, ", "));
  }
}

Json to_json(const ModelDir& m, bool hash) {
  const auto& c = m.config;
  Json j;
  j["dir"] = m.dir.string();
  j["model_type"] = c.model_type;
  j["architectures"] = c.architectures;
  add_facts(j, facts(c, &m.checkpoint));
  j["config_dtype"] = c.dtype_name.empty() ? Json(nullptr) : Json(c.dtype_name);
  j["eos_token_ids"] = m.generation.eos_token_ids;
  j["bos_token_id"] = m.generation.bos_token_id ? Json(*m.generation.bos_token_id) : nullptr;
  j["parameters"] = m.checkpoint.parameter_count();
  j["parameter_bytes"] = m.checkpoint.byte_size();  // the key a config-only directory gives its program's bytes
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
  print_head(m.dir, c, facts(c, &m.checkpoint));
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

/// The model's .lg program checked against its config.json: its report (dims, consts, params)
/// when it checks, and how its params fit `weights` when there are any. An architecture no
/// program covers is still inspected (exit 0: the summary is what was asked for); a program that
/// exists and fails its checks is an error, as `lg check` says.
struct ProgramView {
  std::optional<lg::lang::CheckReport> report;
  std::string note;   ///< the program's path, or "(none: why)"
  /// Set when the program does not check at config.json's context but does up to this length
  /// (the report is the program's at it): lg run, serve and batch need a --max-seq of at most it.
  int64_t max_seq = 0;
  int64_t context = 0;  ///< config.json's context, where max_seq is set
  std::string error;  ///< set when a program exists and does not check against config.json
  std::vector<std::string> mismatches;  ///< params the weights do not fit (runtime::param_problems)
};

/// The largest length below `context` at which the program checks, or 0 where none does (1 does
/// not). A program may bind only below its config's context and say so: phi3.lg refuses an S past
/// config.sliding_window (Phi-3-mini-4k: a window of 2047 of its 4096 positions) and asks for
/// --max-seq, which lg run, serve and batch then lower it at (runtime::resolve_program). Such
/// bounds hold S under a limit, so the lengths that check are 1 to some N: found by bisection, a
/// dozen lowerings for a context of 4096.
int64_t largest_checking_length(const std::filesystem::path& source, const nlohmann::json& config, int64_t context) {
  auto checks = [&](int64_t s) {
    try {
      lg::lang::check_file(source, config, {.max_seq = s});
      return true;
    } catch (const lg::Error&) {
      return false;
    }
  };
  if (context <= 1 || !checks(1)) return 0;
  int64_t lo = 1, hi = context;  // checks at lo, not at hi
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (checks(mid) ? lo : hi) = mid;
  }
  return lo;
}

/// `program`: the --program given, or "" for the one model_type names (runtime::find_model_source).
ProgramView view_program(const std::filesystem::path& dir, const lg::model::ModelConfig& config,
                         const lg::model::Checkpoint* weights, const std::string& program) {
  ProgramView v;
  std::optional<std::filesystem::path> source;
  try {
    source = program.empty() ? lg::runtime::find_model_source(config) : std::filesystem::path(program);
    try {
      v.report = lg::lang::check_file(*source, config.raw, {});
    } catch (const lg::Error&) {
      // Not at the config's context: a run at a --max-seq below it may still bind the program.
      const int64_t n = largest_checking_length(*source, config.raw, config.max_position_embeddings);
      if (n == 0) throw;
      v.report = lg::lang::check_file(*source, config.raw, {.max_seq = n});
      v.max_seq = n;
      v.context = config.max_position_embeddings;
    }
    lg::ir::verify(v.report->graph);
    if (weights) v.mismatches = lg::runtime::param_problems_as_loaded(v.report->graph, *weights);
    v.note = source->string();
  } catch (const lg::Error& e) {
    v.report.reset();
    v.note = std::string("(none: ") + e.what() + ")";
    if (source) v.error = fmt::format("{}: its program {} does not check against config.json", dir.string(), source->string());
  }
  return v;
}

void add_program_json(Json& j, const ProgramView& p) {
  j["program"] = p.note;
  if (!p.report) return;
  // null where the program checks at config.json's context, as lg run then needs no --max-seq.
  j["program_max_seq"] = p.max_seq > 0 ? Json(p.max_seq) : Json(nullptr);
  for (const auto& [key, list] : {std::pair{"program_dims", &p.report->dims}, std::pair{"program_consts", &p.report->consts}}) {
    auto& o = j[key] = Json::object();
    // Each value as the JSON it spells (a number, true or false, a quoted string unquoted), else
    // as text (a dtype's name): a reader gets 1e-05 as a number, not "1e-05".
    for (const auto& n : *list) {
      Json v = Json::parse(n.value, nullptr, /*allow_exceptions=*/false);
      o[n.name] = v.is_number() || v.is_boolean() || v.is_string() ? v : Json(n.value);
    }
  }
}

void print_program(const ProgramView& p) {
  fmt::print("program:      {}\n", p.note);
  if (!p.report) return;
  if (p.max_seq > 0)
    fmt::print("  its length: checks at --max-seq up to {}, not at config.json's context of {}: lg run, serve and "
               "batch need --max-seq {} or less (its dims below are at {})\n",
               p.max_seq, p.context, p.max_seq, p.max_seq);
  fmt::print("  its dims:   {}\n", named_list(p.report->dims));
  if (!p.report->consts.empty()) fmt::print("  its consts: {}\n", named_list(p.report->consts));
}

/// What a checkpoint of the program's params would hold: their elements and bytes in the dtypes
/// the program declares (the tensors a tied LM head shares are one param, as a checkpoint stores
/// them once).
struct ParamTotals {
  uint64_t count = 0, bytes = 0;
  bool overflow = false;  ///< past 2^64 - 1 (a config of absurd sizes): count and bytes mean nothing
};

ParamTotals program_params(const lg::ir::Graph& graph) {
  ParamTotals t;
  for (const auto& p : graph.params) {
    uint64_t n = 1, b = 0;
    for (const auto& d : p.shape)
      t.overflow |= __builtin_mul_overflow(n, d.is_const() ? static_cast<uint64_t>(d.coeff) : 0, &n);
    t.overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(lg::dtype_size(p.dtype)), &b);
    t.overflow |= __builtin_add_overflow(t.count, n, &t.count);
    t.overflow |= __builtin_add_overflow(t.bytes, b, &t.bytes);
  }
  return t;
}

/// What a count of 2^64 - 1 or more (ParamTotals::overflow; decode_weight_bytes saturates there) prints
/// as, rather than a wrapped or saturated number read as a size.
constexpr const char* kPast64 = "2^64 or more (the config's sizes overflow)";

/// `lg inspect` of a directory with a config.json and no weights (bench/shapes/*, which lg bench
/// --shape runs on random weights): what the config and the program say, and that no weights
/// are there, rather than refusing the directory for lacking a checkpoint.
int inspect_shape(const std::filesystem::path& dir, bool as_json, const std::string& program_file) {
  const lg::model::ModelConfig config = lg::model::load_config(dir / "config.json");
  lg::model::GenerationConfig generation = lg::model::load_generation_config(dir / "generation_config.json", config);
  const auto groups = facts(config, nullptr);
  const ProgramView program = view_program(dir, config, nullptr, program_file);
  const ParamTotals params = program.report ? program_params(program.report->graph) : ParamTotals{};
  const uint64_t decode_bytes = lg::model::decode_weight_bytes(config);
  const std::optional<std::filesystem::path> tokenizer =
      std::filesystem::exists(dir / "tokenizer.json") ? std::optional(dir / "tokenizer.json") : std::nullopt;
  add_tokenizer_eos(generation, tokenizer, config.vocab_size);
  // Weights in a form lanegraph does not read (a PyTorch pickle, a GGUF) are named, as lg run names them.
  const std::optional<std::string> unread = lg::model::unread_weights(dir);
  const std::string no_weights = unread ? "no *.safetensors in this directory: " + *unread
                                        : "no *.safetensors in this directory, a config alone (lg bench --shape runs it "
                                          "on random weights)";
  if (as_json) {
    Json j;
    j["dir"] = dir.string();
    j["model_type"] = config.model_type;
    j["architectures"] = config.architectures;
    add_facts(j, groups);
    j["config_dtype"] = config.dtype_name.empty() ? Json(nullptr) : Json(config.dtype_name);
    j["eos_token_ids"] = generation.eos_token_ids;
    j["bos_token_id"] = generation.bos_token_id ? Json(*generation.bos_token_id) : nullptr;
    j["weights"] = nullptr;
    j["weights_note"] = no_weights;
    // The program's, at this config; null too where they pass 2^64 (a config of absurd sizes).
    j["parameters"] = program.report && !params.overflow ? Json(params.count) : nullptr;
    j["parameter_bytes"] = program.report && !params.overflow ? Json(params.bytes) : nullptr;
    j["decode_weight_bytes"] = decode_bytes == UINT64_MAX ? Json(nullptr) : Json(decode_bytes);
    j["tokenizer_json"] = tokenizer ? Json(tokenizer->string()) : nullptr;
    add_program_json(j, program);
    std::cout << j.dump(2) << "\n";
  } else {
    print_head(dir, config, groups);
    if (!config.dtype_name.empty()) fmt::print("dtype:        config {}\n", config.dtype_name);
    fmt::print("tokens:       eos [{}], bos {}\n", fmt::join(generation.eos_token_ids, ", "),
               generation.bos_token_id ? fmt::format("{}", *generation.bos_token_id) : "none");
    fmt::print("weights:      none: {}\n", no_weights);
    if (program.report && params.overflow)
      fmt::print("parameters:   {}\n", kPast64);
    else if (program.report)
      fmt::print("parameters:   {} (the program's params at this config; {} bytes in its dtypes)\n", params.count,
                 params.bytes);
    else
      fmt::print("parameters:   (no program to count them)\n");
    if (decode_bytes == UINT64_MAX)
      fmt::print("decode bytes: {}\n", kPast64);
    else
      fmt::print("decode bytes: {} ({:.2f} GB of bf16 weights a decode token reads: lg bench's floor)\n", decode_bytes,
                 static_cast<double>(decode_bytes) / 1e9);
    fmt::print("tokenizer:    {}\n", tokenizer ? tokenizer->string() : "(no tokenizer.json)");
    print_program(program);
  }
  std::cout.flush();
  std::fflush(stdout);
  if (!program.error.empty()) {
    std::cerr << "lg: error: " << program.error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

LG_COMMAND("inspect", [](CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "Show a Hugging Face model directory: config, dims, tensors (a directory "
                                            "with only a config.json: what the config gives)");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<bool>(false);
  auto hash = std::make_shared<bool>(false);
  auto program_file = std::make_shared<std::string>();
  sub->add_option("dir", *dir, "model directory (config.json + safetensors, or a config.json alone)")->required();
  sub->add_flag("--json", *json, "print one JSON object instead of text");
  sub->add_flag("--check", *check, "also scan every weight for NaN/Inf (reads the whole checkpoint once)");
  sub->add_flag("--hash", *hash, "also print the weights hash a lock is tied to (reads every weight once); "
                                 "without it only the headers are read");
  sub->add_option("--program", *program_file,
                  "the .lg program to check the config and weights against " + lg::cli::program_default_help())
      ->check(CLI::ExistingFile);
  return [dir, json, check, hash, program_file]() {
    if (lg::cli::config_only_dir(*dir)) {
      if (*check || *hash)
        throw lg::Error(fmt::format("{}: {} has no weights to {}: the directory holds a config.json and no "
                                    "*.safetensors (`lg inspect {}` shows what the config gives)",
                                    *dir, *check ? "--check" : "--hash", *check ? "scan" : "hash", *dir));
      return inspect_shape(*dir, *json, *program_file);
    }
    ModelDir m = ModelDir::open(*dir);
    add_tokenizer_eos(m.generation, m.tokenizer_json, m.config.vocab_size);
    // The shapes config.json implies are what the model's program declares for it: lowered
    // (no weight bytes read) and its params compared with the tensors.
    // The program's report is its view of the config: its dims and consts under its own names.
    const ProgramView program = view_program(m.dir, m.config, &m.checkpoint, *program_file);
    const std::vector<std::string>& mismatches = program.mismatches;
    std::vector<lg::model::NonFiniteTensor> bad;
    if (*check) bad = lg::model::find_non_finite(m.checkpoint);
    if (*json) {
      auto j = to_json(m, *hash);
      add_program_json(j, program);
      j["config_mismatches"] = mismatches;
      if (*check) {
        auto& nf = j["non_finite"] = nlohmann::ordered_json::array();
        for (const auto& t : bad) nf.push_back({{"name", t.name}, {"nan", t.nan}, {"inf", t.inf}, {"first_index", t.first_index}});
      }
      std::cout << j.dump(2) << "\n";
    } else {
      print_text(m, *hash);
      print_program(program);
      if (*check && bad.empty()) fmt::print("weights:      all finite (--check)\n");
    }
    std::cout.flush();
    std::fflush(stdout);
    if (!program.error.empty()) std::cerr << "lg: error: " << program.error << "\n";
    for (const auto& s : lg::runtime::group_by_layer(mismatches))
      std::cerr << "lg: error: " << m.dir.string() << ": " << s << "\n";
    for (const auto& t : bad)
      std::cerr << fmt::format("lg: error: {}: tensor {} has {} NaN and {} Inf values (first at flat index {}): the "
                               "forward would give non-finite logits\n",
                               m.dir.string(), t.name, t.nan, t.inf, t.first_index);
    return program.error.empty() && mismatches.empty() && bad.empty() ? 0 : 1;
  };
});
