// Fuzz target for reading a model's config.json (parse_json_text of support/json_file.h, then
// parse_config, and for qwen2/qwen3 read_qwen_fields), optionally followed by a NUL byte and a
// generation_config.json (parse_generation_config, merged with the config read, or with an empty
// one when the config was refused). Reading must give a config or throw lg::Error naming the file;
// any other exception escaping, a crash, a hang, a sanitizer report or an allocation past
// libFuzzer's limit is a bug. A config read must hold what config.h promises: dimensions >= 0,
// > 0 and equal to the file's value where the file has the field, num_attention_heads a multiple
// of num_key_value_heads, a derived head_dim that divides hidden_size, positive rms_norm_eps and
// rope theta where given, one layer_types entry per layer, token ids as written; for Qwen the
// required fields, default RoPE and no sliding window in effect. lg inspect's decode_weight_bytes
// and num_experts run on it (they throw nothing). A generation config read has its documented
// ranges and config.json's eos ids. Seeds in fuzz/corpus/config_fuzz/ (the fixtures' and
// bench/shapes' configs and near misses).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/generation_config.h"
#include "support/error.h"

namespace {

using lg::model::ModelConfig;
using nlohmann::json;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "config_fuzz: %s\n", what);
  std::abort();
}

const json* field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A dimension: >= 0 always; when the file has the field, > 0 and the file's number.
void check_dim(const json& raw, const char* key, int64_t v) {
  if (v < 0) fail("a negative dimension");
  if (const json* f = field(raw, key)) {
    if (v <= 0) fail("a dimension the file gives read as 0");
    if (static_cast<long double>(v) != f->get<long double>()) fail("a dimension read as another number");
  }
}

// A token id as written: the file's integer, not wrapped.
void check_id(const json& f, int64_t v) {
  if (!f.is_number() || static_cast<long double>(v) != f.get<long double>()) fail("a token id read as another number");
}

void check(const ModelConfig& c) {
  const json& raw = c.raw;
  if (!raw.is_object()) fail("a config that is not an object accepted");
  if (!field(raw, "model_type") || raw["model_type"] != c.model_type) fail("model_type not as written");
  check_dim(raw, "vocab_size", c.vocab_size);
  check_dim(raw, "hidden_size", c.hidden_size);
  check_dim(raw, "intermediate_size", c.intermediate_size);
  check_dim(raw, "num_hidden_layers", c.num_hidden_layers);
  check_dim(raw, "num_attention_heads", c.num_attention_heads);
  check_dim(raw, "max_position_embeddings", c.max_position_embeddings);
  if (!c.num_key_value_heads_defaulted) check_dim(raw, "num_key_value_heads", c.num_key_value_heads);
  else if (c.num_key_value_heads != c.num_attention_heads) fail("a defaulted num_key_value_heads that is not MHA");
  if (c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads != 0)
    fail("num_attention_heads not a multiple of num_key_value_heads");
  if (!c.head_dim_derived) check_dim(raw, "head_dim", c.head_dim);
  else if (c.head_dim <= 0 || c.head_dim * c.num_attention_heads != c.hidden_size) fail("a derived head_dim that does not divide");
  if (!(c.rms_norm_eps >= 0) || (field(raw, "rms_norm_eps") && !(c.rms_norm_eps > 0))) fail("rms_norm_eps not positive");
  if (!c.rope_theta_field.empty() && !(c.rope_theta > 0 && std::isfinite(c.rope_theta))) fail("rope theta not positive");
  if (c.num_hidden_layers > 0 && !c.layer_types.empty() && static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
    fail("layer_types not one per layer");
  if (const json* e = field(raw, "eos_token_id")) {
    if (e->is_array()) {
      if (e->size() != c.eos_token_ids.size()) fail("eos_token_id list not as written");
      for (size_t i = 0; i < e->size(); ++i) check_id((*e)[i], c.eos_token_ids[i]);
    } else {
      if (c.eos_token_ids.size() != 1) fail("eos_token_id not as written");
      check_id(*e, c.eos_token_ids[0]);
    }
  }
  if (c.bos_token_id) check_id(raw["bos_token_id"], *c.bos_token_id);
  if (c.pad_token_id) check_id(raw["pad_token_id"], *c.pad_token_id);
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_hidden_layers <= 0 ||
        c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.head_dim <= 0 || c.max_position_embeddings <= 0 ||
        !(c.rms_norm_eps > 0) || c.rope_theta_field.empty())
      fail("a Qwen config without a required field accepted");
    if (c.rope_type != "default") fail("a Qwen config with RoPE scaling accepted");
    if (c.qk_norm != (c.model_type == "qwen3")) fail("qk_norm not Qwen3's");
    if (c.model_type == "qwen2" && (!c.qkv_bias || c.o_bias)) fail("Qwen2 biases not q/k/v only");
    for (const auto& t : c.layer_types)
      if (t != "full_attention") fail("a Qwen layer other than full_attention accepted");
    if (c.layer_types.empty() && c.use_sliding_window && c.sliding_window &&
        c.max_window_layers.value_or(28) < c.num_hidden_layers)
      fail("a Qwen config with a sliding window in effect accepted");
  }
  (void)lg::model::decode_weight_bytes(c);
  (void)lg::model::decode_weight_bytes(c, 64);
  if (lg::model::num_experts(c) < 0) fail("a negative number of experts");
}

void check_generation(const lg::model::GenerationConfig& g, const ModelConfig& c) {
  if (!(g.temperature >= 0)) fail("a negative temperature accepted");
  if (!(g.top_p > 0 && g.top_p <= 1)) fail("top_p outside (0, 1] accepted");
  if (g.top_k < 0) fail("a negative top_k accepted");
  if (!(g.repetition_penalty > 0)) fail("repetition_penalty not positive accepted");
  for (const int64_t id : c.eos_token_ids) {
    bool found = false;
    for (const int64_t e : g.eos_token_ids) found = found || e == id;
    if (!found) fail("config.json's eos id dropped");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  ModelConfig config;
  try {
    config = lg::model::parse_config(lg::parse_json_text(std::string(input.substr(0, nul)), "config.json"),
                                     "config.json");
    check(config);
  } catch (const lg::Error&) {
    config = ModelConfig{};
  }
  if (nul == std::string_view::npos) return 0;
  try {
    const json gen = lg::parse_json_text(std::string(input.substr(nul + 1)), "generation_config.json");
    check_generation(lg::model::parse_generation_config(gen, "generation_config.json", config), config);
  } catch (const lg::Error&) {
  }
  return 0;
}
