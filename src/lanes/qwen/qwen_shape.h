// The dimensions and switches of a Qwen2/2.5/Qwen3 dense model that the hand-written lane is
// instantiated from, and the check that refuses what its templates do not cover.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lg::model {
struct ModelConfig;
}

namespace lg::qwen {

/// What the hand-written lane needs of a config (HF config.json field names in comments).
struct QwenShape {
  std::string family;        ///< "qwen2" or "qwen3" (model_type)
  int64_t vocab = 0;         ///< vocab_size
  int64_t hidden = 0;        ///< hidden_size
  int64_t intermediate = 0;  ///< intermediate_size
  int64_t layers = 0;        ///< num_hidden_layers
  int64_t heads = 0;         ///< num_attention_heads
  int64_t kv_heads = 0;      ///< num_key_value_heads
  int64_t head_dim = 0;      ///< head_dim (Qwen2: hidden_size / num_attention_heads)
  double eps = 1e-6;         ///< rms_norm_eps
  double rope_theta = 1e6;   ///< rope_theta / rope_parameters.rope_theta
  bool qkv_bias = false;     ///< Qwen2: always; Qwen3: attention_bias
  bool qk_norm = false;      ///< Qwen3
  bool tied = false;         ///< tie_word_embeddings
};

/// The fields of a parsed config.json. Throws lg::Error (via check_supported) for what the lane
/// refuses.
QwenShape qwen_shape_from_config(const model::ModelConfig& config);

/// Throws lg::Error "<source>: the hand-written Qwen lane does not support ...; use --lane
/// compiled" when the shape is outside the templates: family other than qwen2/qwen3, head_dim not
/// in {16, 32, 64, 128}, heads not a multiple of kv_heads, GQA ratio above 8, hidden or
/// intermediate not a multiple of 8 or above the GEMV's limit.
void check_supported(const QwenShape& s, const std::string& source);

/// RoPE inverse frequencies as transformers computes them, in fp32:
/// inv_freq[i] = 1 / theta^((2i) / head_dim), i < head_dim / 2.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta);

}  // namespace lg::qwen
