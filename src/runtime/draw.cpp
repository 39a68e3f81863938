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
  if (!(p.u >= 0 && p.u < 1)) throw Error("a sampled draw needs its uniform in [0, 1), got " + std::to_string(p.u));
  const float top = *std::max_element(logits.begin(), logits.end());
  // min_p: the candidates, each with its fixed-point weight.
  std::vector<uint64_t> fixed(V);
  std::vector<int32_t> kept;
  kept.reserve(p.min_p > 0 ? 1024 : V);
  for (size_t i = 0; i < V; ++i) {
    const float w = draw::weight(logits[i], top, p.inv_temperature);
    fixed[i] = draw::fixed(w);
    if (w >= p.min_p) kept.push_back(static_cast<int32_t>(i));
  }
  auto first = [&](int32_t a, int32_t b) {
    return draw::key(logits[static_cast<size_t>(a)], a) > draw::key(logits[static_cast<size_t>(b)], b);
  };
  bool reordered = false;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < kept.size()) {
    reordered = true;
    std::nth_element(kept.begin(), kept.begin() + (p.top_k - 1), kept.end(), first);
    kept.resize(static_cast<size_t>(p.top_k));
  }
  if (p.top_p < 1) {
    reordered = true;
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
  // The draw, in id order over the nucleus.
  if (reordered) std::sort(kept.begin(), kept.end());
  uint64_t mass = 0;
  for (const int32_t id : kept) mass += fixed[static_cast<size_t>(id)];
  const uint64_t target = draw::draw_target(p.u, mass);
  uint64_t running = 0;
  for (const int32_t id : kept) {
    running += fixed[static_cast<size_t>(id)];
    if (running > target) return id;
  }
  return kept.back();  // unreachable: the largest logit weighs 2^40 and is always kept
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
