#include "runtime/draw.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/penalties.h"
#include "support/error.h"

namespace lg::runtime {

int32_t draw_token(std::span<const float> logits, const DrawParams& p) {
  const size_t V = logits.size();
  if (V == 0) throw Error("a sampled draw over empty logits");
  if (!(p.inv_temperature > 0))
    throw Error("a sampled draw needs 1 / temperature > 0, got " + std::to_string(p.inv_temperature));
  // Outside these no token need survive the cuts (min_p above 1 drops even the likeliest).
  if (!(p.min_p >= 0 && p.min_p <= 1)) throw Error("a sampled draw needs min_p in [0, 1], got " + std::to_string(p.min_p));
  if (!(p.top_p > 0 && p.top_p <= 1)) throw Error("a sampled draw needs top_p in (0, 1], got " + std::to_string(p.top_p));
  if (p.top_k < 0) throw Error("a sampled draw needs top_k >= 0, got " + std::to_string(p.top_k));
  const float top = *std::max_element(logits.begin(), logits.end());
  // min_p: the candidates, each with its weight and the weight in fixed point.
  std::vector<float> weight(V);
  std::vector<uint64_t> fixed(V);
  std::vector<int32_t> kept;
  kept.reserve(p.min_p > 0 ? 1024 : V);
  for (size_t i = 0; i < V; ++i) {
    weight[i] = draw::weight(logits[i], top, p.inv_temperature);
    fixed[i] = draw::fixed(weight[i]);
    if (weight[i] >= p.min_p) kept.push_back(static_cast<int32_t>(i));
  }
  auto first = [&](int32_t a, int32_t b) {
    return draw::key(logits[static_cast<size_t>(a)], a) > draw::key(logits[static_cast<size_t>(b)], b);
  };
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < kept.size()) {
    std::nth_element(kept.begin(), kept.begin() + (p.top_k - 1), kept.end(), first);
    kept.resize(static_cast<size_t>(p.top_k));
  }
  if (p.top_p < 1) {
    uint64_t mass = 0;
    for (const int32_t id : kept) mass += fixed[static_cast<size_t>(id)];
    const uint64_t need = draw::nucleus_need(p.top_p, mass);
    // The head of the order is sorted a piece at a time: a nucleus is usually far shorter than V.
    uint64_t head = 0;
    size_t n = 0, sorted = 0;
    while (head < need) {
      if (n == sorted) {
        const size_t more = std::min(kept.size(), std::max<size_t>(2 * sorted, 1024));
        std::partial_sort(kept.begin() + static_cast<long>(sorted), kept.begin() + static_cast<long>(more), kept.end(), first);
        sorted = more;
      }
      head += fixed[static_cast<size_t>(kept[n++])];
    }
    kept.resize(n);
  }
  // The draw: the race over the nucleus (draw::race_place), its tokens of weight zero in fixed
  // point left out as they weigh nothing in the cuts. Its winner does not depend on the order the
  // places are met in; the likeliest token first sets a low bound early.
  const auto likeliest = std::max_element(kept.begin(), kept.end(), [&](int32_t a, int32_t b) { return first(b, a); });
  std::iter_swap(kept.begin(), likeliest);
  uint64_t best = ~0ull;
  for (const int32_t id : kept) {
    if (fixed[static_cast<size_t>(id)] == 0) continue;
    best = std::min(best, draw::race_place_below(weight[static_cast<size_t>(id)], p.key, id, best));
  }
  return static_cast<int32_t>(static_cast<uint32_t>(best));  // the largest logit weighs 2^40 and is always kept
}

int32_t draw_token(std::span<const float> logits, const DrawParams& p, const PenaltyParams& pen,
                   std::span<const PenaltyEdit> edits) {
  std::vector<float> row;
  if (!edits.empty()) {
    row.assign(logits.begin(), logits.end());
    apply_penalty_edits(row, pen, edits);
    logits = row;
  }
  if (!std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); })) return -1;
  return draw_token(logits, p);
}

}  // namespace lg::runtime
