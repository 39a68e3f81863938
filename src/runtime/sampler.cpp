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
  if (!(options.min_p >= 0 && options.min_p <= 1)) throw Error("min_p must be in [0, 1], got " + std::to_string(options.min_p));
  check_penalties(options.penalties);
}

int32_t Sampler::pick(std::span<const float> logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  if (options_.penalties.active()) {
    penalised_.assign(logits.begin(), logits.end());
    history_.apply(penalised_, prompt, output, options_.penalties);
    logits = penalised_;
  }
  if (greedy()) return argmax(logits);
  return draw(logits);
}

int32_t Sampler::draw(std::span<const float> logits) {
  const size_t V = logits.size();
  const double inv_t = 1.0 / options_.temperature;
  // Candidates ordered by logit (ties: lower id first, so the result does not depend on sort
  // internals). Sorting all 151,936 logits every step would cost more than the step itself, so
  // only a head of the order is sorted, and grown when top-p needs more of it.
  std::vector<int32_t> ids(V);
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  size_t keep = options_.top_k > 0 ? std::min(V, static_cast<size_t>(options_.top_k)) : V;
  // Softmax weights relative to the largest logit, in double: exp((l - max) / T). Subtracting
  // before scaling keeps a tiny temperature finite (1 / 2.3e-308 times a logit of 10 overflows,
  // and inf - inf gave NaN weights: every draw was id 0); the largest logit weighs 1 even where
  // 1 / T is inf, so T -> 0 draws among the argmaxes, as the limit should.
  const double top = *std::max_element(logits.begin(), logits.end());
  auto weight = [&](int32_t id) {
    const double l = logits[static_cast<size_t>(id)];
    return l == top ? 1.0 : std::exp((l - top) * inv_t);
  };
  if (options_.min_p > 0) {
    // min_p before top-k and top-p, as vLLM applies it: a token's probability over the largest
    // one's is its weight, so the survivors (weight >= min_p) are a head of the order by logit
    // (equal logits stay or go together), and top-k keeps at most that many. The largest logit
    // weighs 1 >= min_p: at least one token survives.
    size_t survivors = 0;
    for (size_t id = 0; id < V; ++id) survivors += weight(static_cast<int32_t>(id)) >= options_.min_p;
    keep = std::min(keep, survivors);
  }
  size_t sorted = std::min(keep, V < 1024 ? V : size_t{1024});
  if (keep < V) {  // top-k: the k best, sorted
    std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(keep), ids.end(), by_logit);
    sorted = keep;
  } else if (options_.top_p < 1) {
    std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(sorted), ids.end(), by_logit);
  }
  double sum = 0;
  for (size_t k = 0; k < keep; ++k) sum += weight(ids[k]);
  size_t n = keep;
  if (options_.top_p < 1) {
    // Nucleus: the smallest prefix of the order whose probability reaches top_p.
    double cum = 0;
    n = 0;
    while (true) {
      while (n < sorted && cum < options_.top_p) cum += weight(ids[n++]) / sum;
      if (cum >= options_.top_p || sorted == keep) break;
      std::sort(ids.begin() + static_cast<long>(sorted), ids.begin() + static_cast<long>(keep), by_logit);
      sorted = keep;
    }
    n = std::max<size_t>(n, 1);
  }
  std::vector<double> p(n);
  for (size_t k = 0; k < n; ++k) p[k] = weight(ids[k]);
  std::discrete_distribution<size_t> draw(p.begin(), p.end());
  return ids[draw(rng_)];
}

}  // namespace lg::runtime
