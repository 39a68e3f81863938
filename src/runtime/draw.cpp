#include "runtime/draw.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/finite_logits.h"
#include "runtime/penalties.h"
#include "support/error.h"

namespace lg::runtime {

namespace {

/// Moves the shortest head of `ids` in the order `first` whose fixed-point mass reaches `need`
/// (need <= their whole mass) to the front, in no particular order, and returns its length: a
/// selection by mass, partitioning around pivots (expected O(n); the order is total, ids break
/// ties, so any pivots give the same head). A flat nucleus of 10^5 tokens took ~40 ms a draw when
/// its head was sorted a piece at a time.
template <class First>
size_t nucleus_head(std::vector<int32_t>& ids, const std::vector<uint64_t>& fixed, uint64_t need, const First& first) {
  size_t lo = 0, hi = ids.size();  // ids[0, lo) are in the head, and it ends within [lo, hi)
  uint64_t head = 0;               // their mass, below need
  uint64_t pick = 0x9E3779B97F4A7C15ull;
  for (;;) {
    pick = pick * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG: the pivot's place
    const auto at = [&ids](size_t k) { return ids.begin() + static_cast<std::ptrdiff_t>(k); };
    const int32_t pivot = ids[lo + static_cast<size_t>((pick >> 33) % (hi - lo))];
    const auto mid = std::partition(at(lo), at(hi), [&](int32_t id) { return first(id, pivot); });
    std::iter_swap(mid, std::find(mid, at(hi), pivot));
    const size_t m = static_cast<size_t>(mid - ids.begin());
    uint64_t before = 0;
    for (size_t k = lo; k < m; ++k) before += fixed[static_cast<size_t>(ids[k])];
    if (head + before >= need) {
      hi = m;  // the head ends among the tokens before the pivot (there are some: head < need)
      continue;
    }
    head += before + fixed[static_cast<size_t>(pivot)];
    lo = m + 1;
    if (head >= need) return lo;
  }
}

// The weighing below makes nine std::fma calls a token (draw::exp_nonpositive). Built for
// x86-64's baseline they are calls into libm (~4 ms a draw over a 152k vocabulary, half the cpu
// lane's time per token); a clone for CPUs with FMA (Haswell, Zen and later), picked when the
// process starts (GCC's target_clones), makes each one instruction, and flatten inlines the exp
// into it. An FMA rounds once either way: the same weights. Clang (the fuzz build) refuses
// flatten on a multiversioned function: the clones alone there.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__clang__)
#define LG_FMA_CLONES [[gnu::target_clones("fma", "default"), gnu::flatten]]
#elif defined(__x86_64__) && defined(__clang__) && defined(__ELF__)
#define LG_FMA_CLONES [[gnu::target_clones("fma", "default")]]
#else
#define LG_FMA_CLONES
#endif

/// Each token's weight (draw::weight) and its fixed-point value into `weight` and `fixed`, and
/// the ids of those of weight >= min_p into `kept`.
LG_FMA_CLONES void weigh(std::span<const float> logits, float top, const DrawParams& p, std::vector<float>& weight,
                         std::vector<uint64_t>& fixed, std::vector<int32_t>& kept) {
  for (size_t i = 0; i < logits.size(); ++i) {
    weight[i] = draw::weight(logits[i], top, p.inv_temperature);
    fixed[i] = draw::fixed(weight[i]);
    if (weight[i] >= p.min_p) kept.push_back(static_cast<int32_t>(i));
  }
}

}  // namespace

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
  // min_p: the candidates, each with its weight and the weight in fixed point. The buffers are
  // the thread's, kept between draws: fresh ones of a 152k vocabulary's size were new pages to
  // fault in on every draw.
  thread_local std::vector<float> weight;
  thread_local std::vector<uint64_t> fixed;
  thread_local std::vector<int32_t> kept;
  weight.resize(V);
  fixed.resize(V);
  kept.clear();
  kept.reserve(V);
  weigh(logits, top, p, weight, fixed, kept);
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
    kept.resize(nucleus_head(kept, fixed, need, first));
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
                   std::span<const LogitEdit> edits) {
  std::vector<float> row;
  if (!edits.empty()) {
    row.assign(logits.begin(), logits.end());
    apply_logit_edits(row, pen, edits);
    logits = row;
  }
  if (!all_finite(logits)) return -1;
  return draw_token(logits, p);
}

}  // namespace lg::runtime
