#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "support/error.h"

namespace lg::runtime {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw Error("argmax of empty logits");
  size_t best = 0;
  for (size_t k = 1; k < logits.size(); ++k)
    if (logits[k] > logits[best]) best = k;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  if (!(options.temperature >= 0)) throw Error("--temperature must be >= 0, got " + std::to_string(options.temperature));
  if (options.top_k < 0) throw Error("--top-k must be >= 0, got " + std::to_string(options.top_k));
  if (!(options.top_p > 0 && options.top_p <= 1)) throw Error("--top-p must be in (0, 1], got " + std::to_string(options.top_p));
}

int32_t Sampler::pick(std::span<const float> logits) {
  if (greedy()) return argmax(logits);
  // Candidates sorted by logit (ties: lower id first, so the result does not depend on sort internals).
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  size_t keep = ids.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < keep) {
    keep = static_cast<size_t>(options_.top_k);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(keep), ids.end(), by_logit);
  } else {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  ids.resize(keep);
  // Softmax of logits / temperature over the kept candidates, in double.
  const double inv_t = 1.0 / options_.temperature;
  const double top = logits[static_cast<size_t>(ids[0])] * inv_t;
  std::vector<double> p(keep);
  double sum = 0;
  for (size_t k = 0; k < keep; ++k) sum += p[k] = std::exp(logits[static_cast<size_t>(ids[k])] * inv_t - top);
  for (double& x : p) x /= sum;
  if (options_.top_p < 1) {
    double cum = 0;
    size_t n = 0;
    while (n < keep && cum < options_.top_p) cum += p[n++];
    keep = std::max<size_t>(n, 1);
    p.resize(keep);
  }
  std::discrete_distribution<size_t> draw(p.begin(), p.end());
  return ids[draw(rng_)];
}

}  // namespace lg::runtime
