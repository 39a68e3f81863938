// config.json parsing: what every family has, and the usual decoder fields where present (no
// family's defaults; Qwen's reading is in qwen_config.cpp). Field names as transformers (v5.17)
// writes them.
#include "model/config.h"

#include <cmath>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/json_fields.h"
#include "support/error.h"

namespace lg::model {

namespace fs = std::filesystem;
using namespace json_fields;

fs::path config_json_path(fs::path path) {
  if (fs::is_directory(path)) path /= "config.json";
  return path;
}

namespace {

// The sizes transformers builds a model's modules from: range(num_hidden_layers), nn.Linear(
// hidden_size, intermediate_size), nn.Embedding(vocab_size, ...) (GPT-2's n_*: its names for
// them). PretrainedConfig keeps 8.0 as the float it is, and those refuse it (a TypeError), so no
// transformers checkpoint has one. Refused here naming the file and field: the .lg binder refuses
// it at the program's line ("dim 'L' must be a positive integer ... found float 8"), which names
// no config field. max_position_embeddings is not among them: transformers sizes nothing by it,
// and 4096.0 stays the context it is.
constexpr const char* kModuleSizes[] = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "moe_intermediate_size", "num_experts", "num_local_experts",
    "num_experts_per_tok", "n_embd", "n_layer", "n_head", "n_inner", "n_positions"};

void refuse_float_sizes(const nlohmann::json& j, const std::string& src) {
  for (const char* field : kModuleSizes) {
    const nlohmann::json* v = find(j, field);
    if (!v || !v->is_number_float()) continue;
    const double d = v->get<double>();
    // JSON reads an integer past 64 bits as a float (123456789012345678901234567890 was "got
    // float 1.2345678901234568e+29"): out of range, as opt_int says of any integer field.
    if (std::fabs(d) > 9.0e18) out_of_int64_range(src, field, *v);
    const std::string hint =
        d >= 1 && d <= 9.0e18 && d == std::floor(d) ? fmt::format(" (write {})", static_cast<int64_t>(d)) : "";
    throw Error(fmt::format("{}: field '{}' must be an integer, got float {}: transformers sizes the model's modules "
                            "by it (range(), nn.Linear), which refuse a float{}",
                            src, field, v->dump(), hint));
  }
}

}  // namespace

nlohmann::json read_config_json(fs::path path) {
  path = config_json_path(std::move(path));
  nlohmann::json j = read_json_file(path);
  // Named here, where the file is known (the binder could only say "config.json" at the .lg line).
  if (!j.is_object()) throw Error(fmt::format("{}: a model config must be a JSON object, found {}", path.string(), j.type_name()));
  refuse_float_sizes(j, path.string());
  return j;
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

// RoPE: transformers >= 5 writes `rope_parameters` {rope_type, rope_theta, ...} (Gemma 3: one such
// object per layer type); older configs write top-level `rope_theta` and `rope_scaling`. Only read
// here: which RoPE a model uses, scaled or not, is the program's business (llama.lg implements
// `llama3` and `linear` scaling); the theta is kept for inspect and the Qwen lane.
void parse_rope(const nlohmann::json& j, const std::string& src, ModelConfig& c) {
  std::optional<double> theta_params;
  if (const auto* rp = find(j, "rope_parameters")) {
    if (!rp->is_object())
      throw Error(fmt::format("{}: field 'rope_parameters' must be an object, got {}", src, rp->type_name()));
    theta_params = opt_number(*rp, "rope_theta", src, "rope_parameters.rope_theta");
    if (auto t = opt_string(*rp, "rope_type", src, "rope_parameters.rope_type")) c.rope_type = *t;
  }
  if (const auto* rs = find(j, "rope_scaling")) {
    if (!rs->is_object())
      throw Error(fmt::format("{}: field 'rope_scaling' must be an object or null, got {}", src, rs->type_name()));
    c.rope_type = opt_string(*rs, "rope_type", src, "rope_scaling.rope_type")
                      .value_or(opt_string(*rs, "type", src, "rope_scaling.type").value_or("default"));
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
  }
  if (c.rope_theta_field.size() && !(c.rope_theta > 0))
    throw Error(fmt::format("{}: field '{}' must be positive, got {}", src, c.rope_theta_field, c.rope_theta));
}

// Sliding-window fields, read as written. Which layers use a window is the program's business.
void parse_sliding_window(const nlohmann::json& j, const std::string& src, ModelConfig& c) {
  c.use_sliding_window = opt_bool(j, "use_sliding_window", src).value_or(false);
  c.sliding_window = opt_int(j, "sliding_window", src);
  c.max_window_layers = opt_int(j, "max_window_layers", src);
  if (const auto* lt = find(j, "layer_types")) {
    if (!lt->is_array()) throw Error(fmt::format("{}: field 'layer_types' must be a list of strings", src));
    for (size_t i = 0; i < lt->size(); ++i) {
      const auto& e = (*lt)[i];
      if (!e.is_string())
        throw Error(fmt::format("{}: field 'layer_types[{}]' must be a string, got {}", src, i, e.type_name()));
      c.layer_types.push_back(e.get<std::string>());
    }
    if (c.num_hidden_layers > 0 && static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
      throw Error(fmt::format("{}: field 'layer_types' has {} entries but num_hidden_layers is {}", src,
                              c.layer_types.size(), c.num_hidden_layers));
  }
}

std::optional<int64_t> opt_positive(const nlohmann::json& j, const std::string& field, const std::string& src) {
  auto v = opt_int(j, field, src);
  if (v) positive(src, field, *v);
  return v;
}

// transformers' config class of a model_type lanegraph has a program for; nullptr for another.
const char* config_class(const std::string& model_type) {
  static const std::pair<const char*, const char*> kClasses[] = {
      {"qwen2", "Qwen2Config"},     {"qwen3", "Qwen3Config"},     {"qwen3_moe", "Qwen3MoeConfig"},
      {"llama", "LlamaConfig"},     {"mistral", "MistralConfig"}, {"phi3", "Phi3Config"},
      {"gpt2", "GPT2Config"},       {"gemma3_text", "Gemma3TextConfig"}};
  for (const auto& [type, cls] : kClasses)
    if (model_type == type) return cls;
  return nullptr;
}

// Config classes (transformers 5.17, strict dataclasses) that type a dimension `int` with a
// default: an absent field is the default, but the strict validation refuses an explicit null
// ("Field 'head_dim' expected int, got NoneType") before any model is built; MistralConfig's
// __post_init__ would map a None num_key_value_heads to the query heads, but the validation
// refuses it first. Not Llama's reading (LlamaConfig, Phi3Config and Qwen2/Qwen3Config type
// num_key_value_heads `int | None`: null or absent is MHA, or Qwen's 32 when absent).
constexpr int64_t kGemma3KvHeads = 4, kGemma3HeadDim = 256, kMistralKvHeads = 8;

struct StrictIntField {
  const char* model_type;
  const char* config_class;
  const char* field;
  int64_t fallback;
};
constexpr StrictIntField kStrictIntFields[] = {
    {"gemma3_text", "Gemma3TextConfig", "num_key_value_heads", kGemma3KvHeads},
    {"gemma3_text", "Gemma3TextConfig", "head_dim", kGemma3HeadDim},
    {"gemma3_text", "Gemma3TextConfig", "query_pre_attn_scalar", 256},
    {"mistral", "MistralConfig", "num_key_value_heads", kMistralKvHeads},
};

void refuse_strict_int_nulls(const nlohmann::json& j, const std::string& model_type, const std::string& src) {
  for (const auto& f : kStrictIntFields) {
    if (model_type != f.model_type) continue;
    const auto it = j.find(f.field);
    if (it != j.end() && it->is_null())
      throw Error(fmt::format("{}: field '{}' is null: transformers' {} requires an integer there and "
                              "refuses null; leave the field out for its default ({})",
                              src, f.field, f.config_class, f.fallback));
  }
}

}  // namespace

ModelConfig parse_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object, got {}", src, j.type_name()));
  ModelConfig c;
  c.source = src;
  c.raw = j;
  c.model_type = req_string(j, "model_type", src);
  refuse_float_sizes(j, src);
  if (const auto* a = find(j, "architectures")) {
    if (!a->is_array()) throw Error(fmt::format("{}: field 'architectures' must be a list of strings", src));
    for (auto& e : *a) {
      if (!e.is_string()) throw Error(fmt::format("{}: field 'architectures' must be a list of strings", src));
      c.architectures.push_back(e.get<std::string>());
    }
  }

  // The usual decoder fields where present (GPT-2 names them n_embd, n_layer, ...: its program
  // reads those; they stay 0 here).
  c.vocab_size = opt_positive(j, "vocab_size", src).value_or(0);
  c.hidden_size = opt_positive(j, "hidden_size", src).value_or(0);
  c.intermediate_size = opt_positive(j, "intermediate_size", src).value_or(0);
  c.num_hidden_layers = opt_positive(j, "num_hidden_layers", src).value_or(0);
  c.num_attention_heads = opt_positive(j, "num_attention_heads", src).value_or(0);
  const bool gemma3 = c.model_type == "gemma3_text";
  refuse_strict_int_nulls(j, c.model_type, src);
  if (auto kv = opt_positive(j, "num_key_value_heads", src)) {
    c.num_key_value_heads = *kv;
  } else {
    // null or absent: MHA, as transformers' Llama-style configs read it (Qwen: read_qwen_fields);
    // absent in Gemma 3 and Mistral (null is refused above): their config class's default.
    c.num_key_value_heads = gemma3                      ? kGemma3KvHeads
                            : c.model_type == "mistral" ? kMistralKvHeads
                                                        : c.num_attention_heads;
    c.num_key_value_heads_defaulted = true;
  }
  if (c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_attention_heads ({}) is not a multiple of num_key_value_heads ({}): "
                            "GQA needs whole groups",
                            src, c.num_attention_heads, c.num_key_value_heads));
  if (auto hd = opt_positive(j, "head_dim", src)) {
    c.head_dim = *hd;
  } else if (gemma3) {
    c.head_dim = kGemma3HeadDim;  // Gemma3TextConfig's default, whatever hidden_size / heads is
  } else if (c.hidden_size > 0 && c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads == 0) {
    c.head_dim = c.hidden_size / c.num_attention_heads;  // what the modeling code derives
    c.head_dim_derived = true;
  }
  if (auto eps = opt_number(j, "rms_norm_eps", src)) {
    c.rms_norm_eps = *eps;
    if (!(c.rms_norm_eps > 0))
      throw Error(fmt::format("{}: field 'rms_norm_eps' must be positive, got {}", src, c.rms_norm_eps));
  }
  parse_rope(j, src, c);
  c.max_position_embeddings = opt_positive(j, "max_position_embeddings", src).value_or(0);
  // transformers' Llama-style configs (Llama, Mistral, Qwen, Phi-3) default hidden_act to silu.
  c.hidden_act = opt_string(j, "hidden_act", src).value_or("silu");
  // The config class of every family lanegraph runs types it `bool` (transformers 5.17), and its
  // strict validation refuses an explicit null: read as absent, it untied (here) or tied (gpt2.lg,
  // gemma3_text.lg) the LM head by guess.
  if (const auto it = j.find("tie_word_embeddings"); it != j.end() && it->is_null())
    if (const char* cls = config_class(c.model_type))
      throw Error(fmt::format("{}: field 'tie_word_embeddings' is null: transformers' {} requires true or false "
                              "there and refuses null; leave the field out for its default",
                              src, cls));
  c.tie_word_embeddings = opt_bool(j, "tie_word_embeddings", src).value_or(false);
  c.attention_bias = opt_bool(j, "attention_bias", src).value_or(false);
  c.qkv_bias = c.o_bias = c.attention_bias;

  // transformers >= 4.56 writes `dtype`; older files `torch_dtype`. `dtype` wins when both exist.
  if (auto d = opt_string(j, "dtype", src)) c.dtype_name = *d;
  else if (auto td = opt_string(j, "torch_dtype", src)) c.dtype_name = *td;
  c.dtype = torch_dtype(c.dtype_name);

  c.bos_token_id = opt_int(j, "bos_token_id", src);
  c.pad_token_id = opt_int(j, "pad_token_id", src);
  c.eos_token_ids = int_or_list(j, "eos_token_id", src);

  parse_sliding_window(j, src, c);
  // Not qwen3_moe: that reading is the hand-written lane's, which does not run it, and its defaults
  // are Qwen2/Qwen3Config's (num_key_value_heads 32, where Qwen3MoeConfig's is 4). qwen3_moe.lg
  // `require`s what it implements (default RoPE, no sliding window), and every lane runs it.
  if (c.model_type == "qwen2" || c.model_type == "qwen3") read_qwen_fields(j, src, c);
  return c;
}

namespace {
// Byte counts saturate at 2^64 - 1: a config of absurd dims (2^40 heads of 2^40) gives that, not a
// product wrapped to a small number or signed overflow.
uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
}  // namespace

uint64_t decode_weight_bytes(const ModelConfig& c, int64_t batch) {
  auto u = [](int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : uint64_t{0}; };
  const uint64_t D = u(c.hidden_size), F = u(c.intermediate_size), L = u(c.num_hidden_layers);
  const uint64_t q = sat_mul(u(c.num_attention_heads), u(c.head_dim));
  const uint64_t kv = sat_mul(u(c.num_key_value_heads), u(c.head_dim));
  const uint64_t attention = sat_add(sat_mul(sat_add(q, sat_mul(2, kv)), D), sat_mul(D, q));
  const uint64_t dense_mlp = sat_mul(3, sat_mul(F, D));
  // A mixture of experts (Qwen3-MoE's fields): a token of a sparse layer reads the router [E, D]
  // and its k experts' SwiGLU weights, not the dense MLP; the other layers (mlp_only_layers, or
  // off decoder_sparse_step) read the dense MLP.
  const nlohmann::json& j = c.raw;
  auto num = [&](const char* k) -> uint64_t {
    return j.is_object() && j.contains(k) && j[k].is_number_integer() && j[k].get<int64_t>() > 0 ? j[k].get<uint64_t>() : 0;
  };
  const uint64_t E = num("num_experts") ? num("num_experts") : num("num_local_experts");
  const uint64_t Fe = num("moe_intermediate_size"), K = num("num_experts_per_tok");
  const uint64_t step = num("decoder_sparse_step") ? num("decoder_sparse_step") : 1;
  // Experts a step reads per sparse layer, exactly K at batch 1.
  const double Ed = static_cast<double>(E), routed =
      batch <= 1 || E == 0 ? static_cast<double>(K)
                           : Ed * (1.0 - std::pow(1.0 - static_cast<double>(K) / Ed, static_cast<double>(batch)));
  const double expert_bytes = routed * 3.0 * static_cast<double>(sat_mul(Fe, D));
  // (Negative only where num_experts_per_tok exceeds num_experts at a batch > 1.)
  const uint64_t expert_weights = !(expert_bytes > 0)    ? 0
                                  : expert_bytes < 9.0e18 ? static_cast<uint64_t>(std::llround(expert_bytes))
                                                          : UINT64_MAX;
  // Sparse layers: l with (l + 1) % step == 0, L / step of them, less those in mlp_only_layers
  // (counted, not walked: num_hidden_layers may be anything a config writes).
  uint64_t sparse = 0;
  if (E && Fe && K) {
    sparse = L / step;
    std::set<uint64_t> dense_listed;
    if (j.is_object() && j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array())
      for (const auto& x : j["mlp_only_layers"])
        if (x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<uint64_t>() < L && (x.get<uint64_t>() + 1) % step == 0)
          dense_listed.insert(x.get<uint64_t>());
    sparse -= dense_listed.size();
  }
  const uint64_t total = sat_add(sat_mul(L, attention), sat_add(sat_mul(sparse, sat_add(sat_mul(E, D), expert_weights)),
                                                                sat_mul(L - sparse, dense_mlp)));
  return sat_mul(2, sat_add(total, sat_mul(u(c.vocab_size), D)));
}

int64_t num_experts(const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  for (const char* k : {"num_experts", "num_local_experts"})
    if (j.is_object() && j.contains(k) && j[k].is_number_integer() && j[k].get<int64_t>() > 0) return j[k].get<int64_t>();
  return 0;
}

ModelConfig load_config(const fs::path& path) { return parse_config(read_json_file(path), path.string()); }

}  // namespace lg::model
