// Fuzz target for the .lg front end: arbitrary bytes are lexed, parsed, checked and lowered
// against a fixed small Qwen3-shaped config. Any crash, hang, sanitizer report or unbounded
// allocation is a bug; diagnostics are the expected outcome for almost every input.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "lang/lower.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // real programs are a few KB; bigger inputs only slow the search
  static const nlohmann::json config = nlohmann::json::parse(R"({
    "vocab_size": 512, "hidden_size": 64, "intermediate_size": 192, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 3, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "tie_word_embeddings": true,
    "max_position_embeddings": 1024, "dtype": "bfloat16", "hidden_act": "silu", "bos_token_id": null
  })");
  lg::lang::BindOptions opts;
  opts.max_seq = 64;
  opts.max_nodes = 20000;  // keeps every run small: unrolling and inlining are bounded by it
  std::string text(reinterpret_cast<const char*>(data), size);
  auto out = lg::lang::check_source("fuzz.lg", text, config, opts);
  // Rendering walks every diagnostic's span back into the source: exercise it too.
  if (!out.ok && out.rendered.empty()) __builtin_trap();
  return 0;
}
