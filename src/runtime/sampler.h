// Picking the next token from logits, as users of llama.cpp / vLLM / transformers expect:
// temperature 0 is greedy (argmax, lowest id on a tie); otherwise logits / temperature, then
// top-k, then top-p (nucleus), then a draw from a seeded generator, so a run is reproducible.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace lg::runtime {

struct SamplingOptions {
  double temperature = 0;  ///< 0: greedy; must be >= 0
  int64_t top_k = 0;       ///< keep the k most likely tokens; 0: off
  double top_p = 1;        ///< keep the smallest set whose probability reaches top_p; 1: off; in (0, 1]
  uint64_t seed = 0;       ///< seeds the draw
};

/// Index of the largest logit; the lowest index wins a tie (as torch.argmax on CPU).
int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  /// Throws lg::Error for a negative temperature, a negative top_k or top_p outside (0, 1].
  explicit Sampler(const SamplingOptions& options);
  bool greedy() const { return options_.temperature == 0; }
  /// The next token from f32[V] logits.
  int32_t pick(std::span<const float> logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace lg::runtime
