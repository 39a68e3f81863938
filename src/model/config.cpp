// config.json parsing for Qwen2/Qwen2.5/Qwen3. Sources of the fields and defaults: transformers'
// configuration_qwen2.py / configuration_qwen3.py (v5.17) and the configs published on the Hub.
#include "model/config.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/json_fields.h"
#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;
using namespace json_fields;

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open (missing or unreadable)", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed JSON: {}", path.string(), e.what()));
  }
}

nlohmann::json read_config_json(fs::path path) {
  if (fs::is_directory(path)) path /= "config.json";
  return read_json_file(path);
}

namespace {

int64_t positive(const std::string& source, const std::string& field, int64_t v) {
  if (v <= 0) throw Error(fmt::format("{}: field '{}' must be positive, got {}", source, field, v));
  return v;
}

std::optional<DType> torch_dtype(const std::string& name) {
  if (name == "bfloat16") return DType::BF16;
  if (name == "float16") return DType::F16;
  if (name == "float32") return DType::F32;
  return std::nullopt;
}

// RoPE: transformers >= 5 writes `rope_parameters` {rope_type, rope_theta, ...}; older configs
// write top-level `rope_theta` and `rope_scaling` (null or {type|rope_type, factor, ...}).
void parse_rope(const nlohmann::json& j, const std::string& src, ModelConfig& c) {
  std::optional<double> theta_params;
  if (const auto* rp = find(j, "rope_parameters")) {
    if (!rp->is_object())
      throw Error(fmt::format("{}: field 'rope_parameters' must be an object, got {}", src, rp->type_name()));
    theta_params = opt_number(*rp, "rope_theta", src, "rope_parameters.rope_theta");
    if (auto t = opt_string(*rp, "rope_type", src, "rope_parameters.rope_type")) c.rope_type = *t;
    if (c.rope_type != "default")
      throw Error(fmt::format("{}: field 'rope_parameters.rope_type' is '{}': only 'default' RoPE is "
                              "supported for now (no scaling)",
                              src, c.rope_type));
  }
  if (const auto* rs = find(j, "rope_scaling")) {
    if (!rs->is_object())
      throw Error(fmt::format("{}: field 'rope_scaling' must be an object or null, got {}", src, rs->type_name()));
    std::string type = opt_string(*rs, "rope_type", src, "rope_scaling.rope_type")
                           .value_or(opt_string(*rs, "type", src, "rope_scaling.type").value_or("default"));
    if (type != "default")
      throw Error(fmt::format("{}: field 'rope_scaling' asks for '{}' RoPE scaling: only 'default' RoPE is "
                              "supported for now",
                              src, type));
  }
  auto theta_top = opt_number(j, "rope_theta", src);
  if (theta_params && theta_top && *theta_params != *theta_top)
    throw Error(fmt::format("{}: fields 'rope_theta' ({}) and 'rope_parameters.rope_theta' ({}) disagree", src,
                            *theta_top, *theta_params));
  if (theta_params) {
    c.rope_theta = *theta_params;
    c.rope_theta_field = "rope_parameters.rope_theta";
  } else if (theta_top) {
    c.rope_theta = *theta_top;
    c.rope_theta_field = "rope_theta";
  } else {
    throw Error(fmt::format("{}: missing required field 'rope_theta' (or 'rope_parameters.rope_theta')", src));
  }
  if (!(c.rope_theta > 0))
    throw Error(fmt::format("{}: field '{}' must be positive, got {}", src, c.rope_theta_field, c.rope_theta));
}

// Sliding window (Qwen2 family): layer i uses a window when use_sliding_window and i >=
// max_window_layers (transformers derives `layer_types` from that). lanegraph implements only full
// causal attention, so a config where a window would apply is refused, never silently run full.
void parse_sliding_window(const nlohmann::json& j, const std::string& src, ModelConfig& c) {
  c.use_sliding_window = opt_bool(j, "use_sliding_window", src).value_or(false);
  c.sliding_window = opt_int(j, "sliding_window", src);
  c.max_window_layers = opt_int(j, "max_window_layers", src);
  if (const auto* lt = find(j, "layer_types")) {
    if (!lt->is_array())
      throw Error(fmt::format("{}: field 'layer_types' must be a list of strings", src));
    for (size_t i = 0; i < lt->size(); ++i) {
      const auto& e = (*lt)[i];
      if (!e.is_string() || (e != "full_attention" && e != "sliding_attention"))
        throw Error(fmt::format("{}: field 'layer_types[{}]' is {}: supported are 'full_attention' and "
                                "'sliding_attention' (the latter is refused)",
                                src, i, e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
      c.layer_types.push_back(e.get<std::string>());
    }
    if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
      throw Error(fmt::format("{}: field 'layer_types' has {} entries but num_hidden_layers is {}", src,
                              c.layer_types.size(), c.num_hidden_layers));
  }
  // transformers: sliding_window = sliding_window if use_sliding_window else None; when layer_types
  // is absent, layer i is "sliding_attention" iff that window is set and i >= max_window_layers
  // (class default 28).
  const bool has_window = c.use_sliding_window && c.sliding_window.has_value();
  const int64_t window = has_window ? *c.sliding_window : 0;
  std::vector<int64_t> sliding;
  if (!c.layer_types.empty()) {
    for (size_t i = 0; i < c.layer_types.size(); ++i)
      if (c.layer_types[i] == "sliding_attention") sliding.push_back(static_cast<int64_t>(i));
  } else if (has_window) {
    for (int64_t i = c.max_window_layers.value_or(28); i < c.num_hidden_layers; ++i) sliding.push_back(i);
  }
  if (sliding.empty()) return;
  if (has_window)
    throw Error(fmt::format("{}: sliding-window attention (window {}) would apply to layers [{}] (fields "
                            "'use_sliding_window', 'max_window_layers', 'layer_types'): lanegraph implements "
                            "full causal attention only",
                            src, window, fmt::join(sliding, ", ")));
  throw Error(fmt::format("{}: field 'layer_types' marks layers [{}] as sliding_attention but no window is in "
                          "effect (use_sliding_window {}, sliding_window {}): refusing an ambiguous config",
                          src, fmt::join(sliding, ", "), c.use_sliding_window,
                          c.sliding_window ? fmt::format("{}", *c.sliding_window) : "null"));
}

}  // namespace

ModelConfig parse_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object, got {}", src, j.type_name()));
  ModelConfig c;
  c.source = src;
  c.raw = j;
  auto mt = opt_string(j, "model_type", src);
  if (!mt) throw Error(fmt::format("{}: missing required field 'model_type'", src));
  c.model_type = *mt;
  if (const auto* a = find(j, "architectures")) {
    if (!a->is_array()) throw Error(fmt::format("{}: field 'architectures' must be a list of strings", src));
    for (auto& e : *a) {
      if (!e.is_string()) throw Error(fmt::format("{}: field 'architectures' must be a list of strings", src));
      c.architectures.push_back(e.get<std::string>());
    }
  }

  c.vocab_size = positive(src, "vocab_size", req_int(j, "vocab_size", src));
  c.hidden_size = positive(src, "hidden_size", req_int(j, "hidden_size", src));
  c.intermediate_size = positive(src, "intermediate_size", req_int(j, "intermediate_size", src));
  c.num_hidden_layers = positive(src, "num_hidden_layers", req_int(j, "num_hidden_layers", src));
  c.num_attention_heads = positive(src, "num_attention_heads", req_int(j, "num_attention_heads", src));
  const bool qwen = c.model_type == "qwen2" || c.model_type == "qwen3";
  if (auto kv = opt_int(j, "num_key_value_heads", src)) {
    c.num_key_value_heads = positive(src, "num_key_value_heads", *kv);
  } else {
    // An explicit null means MHA (num_key_value_heads = num_attention_heads) in transformers. A
    // field left out entirely takes the Qwen config classes' default, 32: refuse when that and MHA
    // disagree rather than guess which one the checkpoint was trained with.
    if (qwen && !j.contains("num_key_value_heads") && c.num_attention_heads != 32)
      throw Error(fmt::format("{}: missing field 'num_key_value_heads': transformers' {} default is 32, "
                              "not num_attention_heads ({}); write the field explicitly",
                              src, c.model_type, c.num_attention_heads));
    c.num_key_value_heads = c.num_attention_heads;
    c.num_key_value_heads_defaulted = true;
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_attention_heads ({}) is not a multiple of num_key_value_heads ({}): "
                            "GQA needs whole groups",
                            src, c.num_attention_heads, c.num_key_value_heads));
  if (auto hd = opt_int(j, "head_dim", src)) {
    c.head_dim = positive(src, "head_dim", *hd);
  } else {
    // Qwen2 configs have no head_dim: the modeling code uses hidden_size // num_attention_heads.
    // Qwen3Config instead has a class default of 128, so an absent field means 128 there.
    if (c.model_type == "qwen3" && c.hidden_size != 128 * c.num_attention_heads)
      throw Error(fmt::format("{}: missing field 'head_dim': transformers' qwen3 default is 128, not "
                              "hidden_size / num_attention_heads ({} / {}); write the field explicitly",
                              src, c.hidden_size, c.num_attention_heads));
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(fmt::format("{}: no field 'head_dim', and hidden_size ({}) is not divisible by "
                              "num_attention_heads ({}) to derive it",
                              src, c.hidden_size, c.num_attention_heads));
    c.head_dim = c.hidden_size / c.num_attention_heads;
    c.head_dim_derived = true;
  }

  c.rms_norm_eps = req_number(j, "rms_norm_eps", src);
  if (!(c.rms_norm_eps > 0))
    throw Error(fmt::format("{}: field 'rms_norm_eps' must be positive, got {}", src, c.rms_norm_eps));
  parse_rope(j, src, c);
  c.max_position_embeddings = positive(src, "max_position_embeddings", req_int(j, "max_position_embeddings", src));
  c.hidden_act = opt_string(j, "hidden_act", src).value_or("silu");
  c.tie_word_embeddings = opt_bool(j, "tie_word_embeddings", src).value_or(false);

  c.attention_bias = opt_bool(j, "attention_bias", src).value_or(false);
  if (c.model_type == "qwen2") {
    // Qwen2Attention: q/k/v Linear layers have bias=True, o_proj bias=False, whatever the config says.
    c.qkv_bias = true;
    c.o_bias = false;
    c.qk_norm = false;
  } else {
    c.qkv_bias = c.o_bias = c.attention_bias;
    c.qk_norm = c.model_type == "qwen3";
  }

  // transformers >= 4.56 writes `dtype`; older files `torch_dtype`. `dtype` wins when both exist.
  if (auto d = opt_string(j, "dtype", src)) c.dtype_name = *d;
  else if (auto td = opt_string(j, "torch_dtype", src)) c.dtype_name = *td;
  c.dtype = torch_dtype(c.dtype_name);

  c.bos_token_id = opt_int(j, "bos_token_id", src);
  c.pad_token_id = opt_int(j, "pad_token_id", src);
  c.eos_token_ids = int_or_list(j, "eos_token_id", src);

  parse_sliding_window(j, src, c);
  return c;
}

uint64_t decode_weight_bytes(const ModelConfig& c) {
  const auto D = static_cast<uint64_t>(c.hidden_size), F = static_cast<uint64_t>(c.intermediate_size);
  const auto q = static_cast<uint64_t>(c.num_attention_heads * c.head_dim);
  const auto kv = static_cast<uint64_t>(c.num_key_value_heads * c.head_dim);
  const uint64_t per_layer = (q + 2 * kv) * D + D * q + 2 * F * D + D * F;
  return 2 * (static_cast<uint64_t>(c.num_hidden_layers) * per_layer + static_cast<uint64_t>(c.vocab_size) * D);
}

ModelConfig load_config(const fs::path& path) { return parse_config(read_json_file(path), path.string()); }

}  // namespace lg::model
