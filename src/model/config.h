// config.json of a Hugging Face model, parsed into what every family has: model_type (which names
// the .lg program), the token ids, the dtype, and the whole document for the program's
// `config.x.y` reads. What a model *is* (its dims, norms, RoPE, attention windows) is the .lg
// program's business: it reads the keys it needs and `require`s the ones it implements.
//
// The usual decoder fields (hidden_size, num_attention_heads, ...) are read too where a config has
// them, for `lg inspect`, `lg bench`'s bandwidth floor and the hand-written Qwen lane; absent ones
// stay 0 and nothing else is assumed. A Qwen2/Qwen3 config gets in addition the hand-written
// lane's reading (qwen_config.cpp): transformers' Qwen defaults and refusals.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/dtype.h"
#include "support/json_file.h"  // read_json_file, parse_json_text: how config.json and its siblings are read

namespace lg::model {

/// A parsed config.json. Dimensions are element counts; all are > 0 after parsing.
struct ModelConfig {
  std::string source;                      ///< file name used in messages ("config.json" path)
  std::string model_type;                  ///< "qwen2", "qwen3", ...
  std::vector<std::string> architectures;  ///< e.g. {"Qwen3ForCausalLM"}

  // The decoder fields below are 0 (or empty) when config.json lacks them.
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  /// null or absent -> num_attention_heads (MHA). For Qwen, whose config classes default an
  /// absent field to 32, an absent field is accepted only where 32 == num_attention_heads. For
  /// gemma3_text, absent -> 4 (Gemma3TextConfig's default) and null is refused, as transformers does.
  int64_t num_key_value_heads = 0;
  bool num_key_value_heads_defaulted = false;
  /// Absent: hidden_size / num_attention_heads when both are present and divide (Qwen3Config
  /// defaults it to 128, so for qwen3 an absent field is accepted only where both readings agree;
  /// gemma3_text: 256, Gemma3TextConfig's default, and a null field is refused).
  int64_t head_dim = 0;
  bool head_dim_derived = false;

  double rms_norm_eps = 0;
  double rope_theta = 0;            ///< from `rope_theta` or `rope_parameters.rope_theta`
  std::string rope_theta_field;     ///< which of the two it came from
  std::string rope_type = "default";  ///< as read; Qwen configs accept only "default"
  int64_t max_position_embeddings = 0;
  std::string hidden_act = "silu";   ///< as read; absent: "silu", Llama-style configs' default

  /// HF default false: lm_head.weight is its own tensor (gpt2.lg and gemma3_text.lg default to
  /// true, as their config classes). null is refused: transformers' config classes refuse it.
  bool tie_word_embeddings = false;
  /// Bias terms, as transformers' Llama-style attention reads `attention_bias` (q, k, v and o
  /// alike). Qwen2 always has q/k/v bias and no o bias (its config has no field for it).
  bool attention_bias = false;       ///< the field as read (false if absent)
  bool qkv_bias = false;
  bool o_bias = false;
  bool qk_norm = false;              ///< Qwen3 (set for model_type qwen3 only): RMSNorm on q and k per head

  std::string dtype_name;            ///< `dtype` (transformers >= 4.56) or `torch_dtype`; "" if absent
  std::optional<DType> dtype;        ///< dtype_name mapped ("bfloat16" -> BF16, ...)

  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  std::vector<int64_t> eos_token_ids;  ///< `eos_token_id`: a number or a list

  /// Sliding-window fields, read and reported. Whether a window applies is the program's business
  /// (mistral.lg, gemma3_text.lg implement it); for Qwen configs parse_config refuses one that
  /// would apply to any layer (qwen2.lg/qwen3.lg and the hand-written lane have none).
  bool use_sliding_window = false;
  std::optional<int64_t> sliding_window;
  std::optional<int64_t> max_window_layers;  ///< as read; transformers' default when absent is 28
  std::vector<std::string> layer_types;  ///< one per layer when present

  nlohmann::json raw;  ///< the whole file, for `config.x.y` lookups by the front end
};

/// Parses a config.json document. `source_name` names the file in messages. Throws lg::Error
/// naming the file and field for a missing model_type, a field of the wrong type, a module size
/// written as a float (`"num_hidden_layers": 8.0`: transformers refuses it too), a null
/// num_key_value_heads, head_dim or query_pre_attn_scalar of a gemma3_text config (Gemma3TextConfig
/// refuses it too), a null tie_word_embeddings (every family's config class refuses it), a
/// non-positive dimension, head counts that do not divide, rope thetas that disagree, and a
/// layer_types list whose length is not num_hidden_layers. For model_type qwen2/qwen3 also what
/// read_qwen_fields throws (missing required fields, ambiguous defaults, RoPE scaling, sliding
/// windows).
ModelConfig parse_config(const nlohmann::json& json, const std::string& source_name);
/// The hand-written Qwen lane's reading of a Qwen2/Qwen3 config (qwen_config.cpp), applied by
/// parse_config after the generic one: "<source>: missing required field 'hidden_size'" for a
/// missing vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
/// rms_norm_eps, max_position_embeddings or rope theta; refuses an absent field whose transformers
/// default is ambiguous (num_key_value_heads, qwen3 head_dim), a rope type other than "default" and
/// sliding-window attention that would apply; sets the Qwen biases and qk_norm.
void read_qwen_fields(const nlohmann::json& json, const std::string& source_name, ModelConfig& config);
/// Reads and parses a config.json file (malformed JSON is an lg::Error naming the file).
ModelConfig load_config(const std::filesystem::path& path);

/// Bytes of bf16 weights one decode token of the decoder `c` describes reads: every layer's
/// q/k/v/o and gate/up/down matrices and the LM head (the embedding table is only gathered from,
/// one row per token; norm weights and biases are left out, under 0.01%). For a mixture of
/// experts (num_experts or num_local_experts, moe_intermediate_size, num_experts_per_tok in
/// config.json, as Qwen3-MoE writes them) a sparse layer counts its router and the k experts a
/// token is routed to, not all E. The numerator of `lg bench`'s bandwidth floor.
/// A step of `batch` tokens reads each routed expert once: a sparse layer then counts the expected
/// number of distinct experts among `batch` tokens routed uniformly, E (1 - (1 - k/E)^batch)
/// (random weights route about uniformly; a trained router's skew makes the union smaller), which
/// is k at batch 1 and nears E as the batch grows. Throws nothing; batch < 1 counts as 1. Takes time
/// independent of num_hidden_layers and saturates at 2^64 - 1 (a config of absurd dimensions).
uint64_t decode_weight_bytes(const ModelConfig& c, int64_t batch = 1);

/// Experts per sparse layer of a mixture-of-experts config (num_experts, or num_local_experts, as
/// Qwen3-MoE and Mixtral write it); 0 for a dense model.
int64_t num_experts(const ModelConfig& c);

/// The config.json `path` names: the file itself, or the one in the model directory `path`.
std::filesystem::path config_json_path(std::filesystem::path path);
/// The raw config.json document of a model: `path` is the file or the model directory holding it.
/// What `lg check/ir/compile --config` take; lg::Error naming the file as read_json_file, when
/// the document is not an object, and for a module size written as a float (as parse_config).
nlohmann::json read_config_json(std::filesystem::path path);

}  // namespace lg::model
