#include "lanes/qwen/qwen_shape.h"

#include <cmath>

#include "lanes/qwen/kernels.h"
#include "model/config.h"
#include "support/error.h"

namespace lg::qwen {

QwenShape qwen_shape_from_config(const model::ModelConfig& c) {
  QwenShape s;
  s.family = c.model_type;
  s.vocab = c.vocab_size;
  s.hidden = c.hidden_size;
  s.intermediate = c.intermediate_size;
  s.layers = c.num_hidden_layers;
  s.heads = c.num_attention_heads;
  s.kv_heads = c.num_key_value_heads;
  s.head_dim = c.head_dim;
  s.eps = c.rms_norm_eps;
  s.rope_theta = c.rope_theta;
  s.qkv_bias = c.qkv_bias;
  s.qk_norm = c.qk_norm;
  s.tied = c.tie_word_embeddings;
  if (c.o_bias) throw Error(c.source + ": the hand-written Qwen lane has no o_proj bias (attention_bias on qwen3); use --lane compiled");
  if (c.hidden_act != "silu")
    throw Error(c.source + ": hidden_act '" + c.hidden_act + "': the hand-written Qwen lane implements silu only");
  check_supported(s, c.source);
  return s;
}

void check_supported(const QwenShape& s, const std::string& source) {
  auto refuse = [&](const std::string& why) {
    throw Error(source + ": the hand-written Qwen lane does not support " + why + "; use --lane compiled");
  };
  if (s.family != "qwen2" && s.family != "qwen3") refuse("model_type '" + s.family + "'");
  if (s.head_dim != 16 && s.head_dim != 32 && s.head_dim != 64 && s.head_dim != 128)
    refuse("head_dim " + std::to_string(s.head_dim) + " (templates: 16, 32, 64, 128)");
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    refuse("num_attention_heads " + std::to_string(s.heads) + " with num_key_value_heads " + std::to_string(s.kv_heads));
  if (s.heads / s.kv_heads > 8) refuse("GQA ratio " + std::to_string(s.heads / s.kv_heads) + " (templates: 1..8)");
  if (s.hidden % 8 != 0 || s.hidden > kGemvMaxK) refuse("hidden_size " + std::to_string(s.hidden));
  if (s.intermediate % 8 != 0 || s.intermediate > kGemvMaxK)
    refuse("intermediate_size " + std::to_string(s.intermediate) + " (multiple of 8, at most " + std::to_string(kGemvMaxK) + ")");
  if ((s.heads * s.head_dim) > kGemvMaxK) refuse("num_attention_heads * head_dim above " + std::to_string(kGemvMaxK));
  if (s.vocab % 2 != 0) refuse("odd vocab_size " + std::to_string(s.vocab));
  if (s.vocab > (int64_t{1} << 30)) refuse("vocab_size " + std::to_string(s.vocab));
}

std::vector<float> rope_inv_freq(int64_t head_dim, double theta) {
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all in fp32.
  std::vector<float> f(static_cast<size_t>(head_dim / 2));
  const float base = static_cast<float>(theta);
  for (size_t i = 0; i < f.size(); ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    f[i] = 1.0f / powf(base, e);
  }
  return f;
}

}  // namespace lg::qwen
