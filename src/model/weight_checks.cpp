#include "model/weight_checks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.h"

namespace lg::model {

namespace {

/// Counts NaN/Inf among `n` values of `bits` wide with exponent mask `exp` and mantissa mask `man`
/// (all exponent bits set: Inf if the mantissa is 0, else NaN).
template <typename U>
void scan(const std::byte* p, uint64_t n, U exp, U man, NonFiniteTensor& out) {
  for (uint64_t k = 0; k < n; ++k) {
    U v;
    std::memcpy(&v, p + k * sizeof(U), sizeof(U));
    if ((v & exp) != exp) continue;
    if (out.nan + out.inf == 0) out.first_index = k;
    if (v & man) ++out.nan;
    else ++out.inf;
  }
}

}  // namespace

std::vector<NonFiniteTensor> find_non_finite(const Checkpoint& ckpt) {
  std::vector<NonFiniteTensor> found;
  for (const auto& name : ckpt.names()) {
    const TensorInfo& t = ckpt.info(name);
    const auto bytes = ckpt.bytes(name);
    NonFiniteTensor r{name};
    const uint64_t n = t.numel();
    switch (t.dtype) {
      case DType::BF16: scan<uint16_t>(bytes.data(), n, 0x7F80, 0x007F, r); break;
      case DType::F16: scan<uint16_t>(bytes.data(), n, 0x7C00, 0x03FF, r); break;
      case DType::F32: scan<uint32_t>(bytes.data(), n, 0x7F800000u, 0x007FFFFFu, r); break;
      default: continue;
    }
    if (r.nan + r.inf) found.push_back(std::move(r));
  }
  return found;
}

std::vector<std::string> config_shape_mismatches(const ModelConfig& c, const Checkpoint& ckpt) {
  std::vector<std::string> out;
  auto expect = [&](const std::string& name, std::vector<int64_t> shape, const char* fields) {
    if (!ckpt.contains(name)) return;
    const auto& have = ckpt.info(name).shape;
    if (have != shape)
      out.push_back(fmt::format("{} is [{}] but config.json implies [{}] ({})", name, fmt::join(have, ", "),
                                fmt::join(shape, ", "), fields));
  };
  const int64_t V = c.vocab_size, D = c.hidden_size, F = c.intermediate_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  expect("model.embed_tokens.weight", {V, D}, "vocab_size x hidden_size");
  expect("model.norm.weight", {D}, "hidden_size");
  if (!c.tie_word_embeddings) expect("lm_head.weight", {V, D}, "vocab_size x hidden_size");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    expect(p + "input_layernorm.weight", {D}, "hidden_size");
    expect(p + "post_attention_layernorm.weight", {D}, "hidden_size");
    expect(p + "self_attn.q_proj.weight", {q, D}, "num_attention_heads*head_dim x hidden_size");
    expect(p + "self_attn.k_proj.weight", {kv, D}, "num_key_value_heads*head_dim x hidden_size");
    expect(p + "self_attn.v_proj.weight", {kv, D}, "num_key_value_heads*head_dim x hidden_size");
    expect(p + "self_attn.o_proj.weight", {D, q}, "hidden_size x num_attention_heads*head_dim");
    expect(p + "self_attn.q_proj.bias", {q}, "num_attention_heads*head_dim");
    expect(p + "self_attn.k_proj.bias", {kv}, "num_key_value_heads*head_dim");
    expect(p + "self_attn.v_proj.bias", {kv}, "num_key_value_heads*head_dim");
    expect(p + "self_attn.q_norm.weight", {c.head_dim}, "head_dim");
    expect(p + "self_attn.k_norm.weight", {c.head_dim}, "head_dim");
    expect(p + "mlp.gate_proj.weight", {F, D}, "intermediate_size x hidden_size");
    expect(p + "mlp.up_proj.weight", {F, D}, "intermediate_size x hidden_size");
    expect(p + "mlp.down_proj.weight", {D, F}, "hidden_size x intermediate_size");
  }
  // Layers past the config's count: a config from a shallower model of the same family.
  int64_t deepest = -1;
  for (const auto& name : ckpt.names()) {
    if (name.rfind("model.layers.", 0) != 0) continue;
    const int64_t l = std::strtoll(name.c_str() + 13, nullptr, 10);
    deepest = std::max(deepest, l);
  }
  if (deepest >= c.num_hidden_layers)
    out.push_back(fmt::format("the checkpoint has layers 0..{} but config.json has num_hidden_layers {}", deepest,
                              c.num_hidden_layers));
  return out;
}

void require_config_matches_shapes(const ModelConfig& config, const Checkpoint& ckpt, const std::string& where) {
  const std::vector<std::string> m = config_shape_mismatches(config, ckpt);
  if (m.empty()) return;
  std::string msg = where + ": " + m.front();
  if (m.size() > 1) msg += fmt::format(" (and {} more; `lg inspect {}` lists them)", m.size() - 1, where);
  throw Error(msg);
}

}  // namespace lg::model
