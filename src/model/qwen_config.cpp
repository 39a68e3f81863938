// The hand-written Qwen lane's reading of a Qwen2/Qwen2.5/Qwen3 config.json: the fields it needs
// are required, transformers' Qwen defaults are applied where they are unambiguous, and what
// neither the lane nor qwen2.lg/qwen3.lg implement (RoPE scaling, sliding windows) is refused
// rather than run as something else. Sources: configuration_qwen2.py / configuration_qwen3.py and
// modeling_qwen2.py / modeling_qwen3.py (transformers v5.17), and the configs on the Hub. Other
// families get no such reading: their .lg program reads and `require`s what it needs.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/config.h"
#include "model/json_fields.h"
#include "support/error.h"

namespace lg::model {

using namespace json_fields;

namespace {

void require_field(const nlohmann::json& j, const char* field, const std::string& src) {
  if (!find(j, field)) throw Error(fmt::format("{}: missing required field '{}'", src, field));
}

// The layers a message names: all of them up to kShown, else the first kShown, "...", the last
// and how many.
struct SlidingLayers {
  static constexpr int64_t kShown = 16;
  std::vector<int64_t> first;
  int64_t last = 0, count = 0;
  void add(int64_t i) {
    if (count++ < kShown) first.push_back(i);
    last = i;
  }
  /// Layers [from, to): their count and ends, never a walk over all of them.
  void add_range(int64_t from, int64_t to) {
    for (int64_t i = from; i < to && i - from < kShown; ++i) add(i);
    if (from < to) count = to - from, last = to - 1;
  }
  std::string str() const {
    if (count <= kShown) return fmt::format("{}", fmt::join(first, ", "));
    return fmt::format("{}, ..., {} ({} layers)", fmt::join(first, ", "), last, count);
  }
};

// Sliding window (Qwen2 family): layer i uses a window when use_sliding_window and i >=
// max_window_layers (transformers derives `layer_types` from that). Neither the Qwen programs nor
// the hand-written lane implement one, so a config where a window would apply is refused, never
// silently run with full attention.
void refuse_sliding_window(const std::string& src, const ModelConfig& c) {
  for (size_t i = 0; i < c.layer_types.size(); ++i)
    if (c.layer_types[i] != "full_attention" && c.layer_types[i] != "sliding_attention")
      throw Error(fmt::format("{}: field 'layer_types[{}]' is \"{}\": supported are 'full_attention' and "
                              "'sliding_attention' (the latter is refused)",
                              src, i, c.layer_types[i]));
  // transformers: sliding_window = sliding_window if use_sliding_window else None; when
  // layer_types is absent, layer i is "sliding_attention" iff that window is set and i >=
  // max_window_layers (class default 28).
  // The layers are counted, not listed: num_hidden_layers can be anything up to 2^63 here.
  const bool has_window = c.use_sliding_window && c.sliding_window.has_value();
  const int64_t window = has_window ? *c.sliding_window : 0;
  SlidingLayers sliding;
  if (!c.layer_types.empty()) {
    for (size_t i = 0; i < c.layer_types.size(); ++i)
      if (c.layer_types[i] == "sliding_attention") sliding.add(static_cast<int64_t>(i));
  } else if (has_window) {
    // max_window_layers below 0 puts every layer past it, as transformers' `i >= max_window_layers`.
    sliding.add_range(std::max<int64_t>(c.max_window_layers.value_or(28), 0), c.num_hidden_layers);
  }
  if (sliding.count == 0) return;
  if (has_window)
    throw Error(fmt::format("{}: sliding-window attention (window {}) would apply to layers [{}] (fields "
                            "'use_sliding_window', 'max_window_layers', 'layer_types'): the Qwen programs and "
                            "the hand-written lane implement full causal attention only",
                            src, window, sliding.str()));
  throw Error(fmt::format("{}: field 'layer_types' marks layers [{}] as sliding_attention but no window is in "
                          "effect (use_sliding_window {}, sliding_window {}): refusing an ambiguous config",
                          src, sliding.str(), c.use_sliding_window,
                          c.sliding_window ? fmt::format("{}", *c.sliding_window) : "null"));
}

}  // namespace

void read_qwen_fields(const nlohmann::json& j, const std::string& src, ModelConfig& c) {
  for (const char* f : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"})
    require_field(j, f, src);
  // An explicit null means MHA (num_key_value_heads = num_attention_heads) in transformers. A
  // field left out entirely takes the Qwen config classes' default, 32: refuse when that and MHA
  // disagree rather than guess which one the checkpoint was trained with.
  if (!j.contains("num_key_value_heads") && c.num_attention_heads != 32)
    throw Error(fmt::format("{}: missing field 'num_key_value_heads': transformers' {} default is 32, "
                            "not num_attention_heads ({}); write the field explicitly",
                            src, c.model_type, c.num_attention_heads));
  if (c.head_dim_derived || c.head_dim == 0) {
    // Qwen2 configs have no head_dim: the modeling code uses hidden_size // num_attention_heads.
    // Qwen3Config instead has a class default of 128, so an absent field means 128 there.
    if (c.model_type == "qwen3" && c.hidden_size != 128 * c.num_attention_heads)
      throw Error(fmt::format("{}: missing field 'head_dim': transformers' qwen3 default is 128, not "
                              "hidden_size / num_attention_heads ({} / {}); write the field explicitly",
                              src, c.hidden_size, c.num_attention_heads));
    if (c.head_dim == 0)
      throw Error(fmt::format("{}: no field 'head_dim', and hidden_size ({}) is not divisible by "
                              "num_attention_heads ({}) to derive it",
                              src, c.hidden_size, c.num_attention_heads));
  }
  require_field(j, "rms_norm_eps", src);
  if (c.rope_theta_field.empty())
    throw Error(fmt::format("{}: missing required field 'rope_theta' (or 'rope_parameters.rope_theta')", src));
  if (const auto* rp = find(j, "rope_parameters"); rp && c.rope_type != "default" && !find(j, "rope_scaling"))
    throw Error(fmt::format("{}: field 'rope_parameters.rope_type' is '{}': the Qwen programs and the "
                            "hand-written lane implement the default RoPE only (no scaling)",
                            src, c.rope_type));
  if (find(j, "rope_scaling") && c.rope_type != "default")
    throw Error(fmt::format("{}: field 'rope_scaling' asks for '{}' RoPE scaling: the Qwen programs and the "
                            "hand-written lane implement the default RoPE only",
                            src, c.rope_type));
  require_field(j, "max_position_embeddings", src);

  if (c.model_type == "qwen2") {
    // Qwen2Attention: q/k/v Linear layers have bias=True, o_proj bias=False, whatever the config says.
    c.qkv_bias = true;
    c.o_bias = false;
  }
  c.qk_norm = c.model_type == "qwen3";
  refuse_sliding_window(src, c);
}

}  // namespace lg::model
