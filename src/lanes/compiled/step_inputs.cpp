#include "lanes/compiled/step_inputs.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace lg::compiled {

StepInputMirror::StepInputMirror(int64_t max_t, int64_t max_b, int64_t blocks_per_seq)
    : max_t_(max_t), max_b_(max_b), mb_(blocks_per_seq) {
  if (max_t < 1 || max_b < 1 || blocks_per_seq < 1)
    throw Error("compiled lane: internal error: step inputs for " + std::to_string(max_t) + " tokens, " +
                std::to_string(max_b) + " sequences of " + std::to_string(blocks_per_seq) + " blocks");
  const auto t = static_cast<size_t>(max_t), b = static_cast<size_t>(max_b);
  held_[kTokens].assign(t, 0);
  held_[kPos].assign(t, 0);
  held_[kSeq].assign(t, 0);
  held_[kBlockTable].assign(b * static_cast<size_t>(mb_), 0);
  held_[kRows].assign(b, 0);
}

namespace {

void reserve(std::span<int32_t> staging, int64_t used, int64_t n) {
  if (used + n > static_cast<int64_t>(staging.size()))
    throw Error("compiled lane: internal error: step input staging of " + std::to_string(staging.size()) +
                " elements is too small");
}

}  // namespace

void StepInputMirror::diff_1d(StepInput k, std::span<const int32_t> v, std::span<int32_t> staging, int64_t& used,
                              std::vector<InputCopy>& out) {
  std::vector<int32_t>& h = held_[static_cast<size_t>(k)];
  if (v.size() > h.size())
    throw Error("compiled lane: internal error: " + std::to_string(v.size()) + " values for a step input of " +
                std::to_string(h.size()));
  size_t first = 0, last = v.size();
  while (first < last && v[first] == h[first]) ++first;
  while (last > first && v[last - 1] == h[last - 1]) --last;
  if (first == last) return;
  const auto n = static_cast<int64_t>(last - first);
  reserve(staging, used, n);
  std::copy(v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(last),
            staging.begin() + used);
  std::copy(v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(last),
            h.begin() + static_cast<std::ptrdiff_t>(first));
  out.push_back({k, used, static_cast<int64_t>(first), n, n, 1});
  used += n;
}

std::vector<InputCopy> StepInputMirror::plan(const FlatBatch& f, std::span<int32_t> staging) {
  std::vector<InputCopy> out;
  int64_t used = 0;
  diff_1d(kTokens, f.tokens, staging, used, out);
  diff_1d(kPos, f.pos, staging, used, out);
  diff_1d(kSeq, f.seq, staging, used, out);
  diff_1d(kBlockTable, f.block_table, staging, used, out);
  diff_1d(kRows, f.rows, staging, used, out);
  return out;
}

std::vector<InputCopy> StepInputMirror::plan_decode(const FlatBatch& f, int64_t bucket, int32_t pad_block,
                                                    int64_t block_size, std::span<int32_t> staging) {
  if (f.T != f.B || f.B < 1)
    throw Error("compiled lane: internal error: a decode step of " + std::to_string(f.T) + " tokens for " +
                std::to_string(f.B) + " sequences");
  if (bucket < f.B || bucket > max_b_)
    throw Error("compiled lane: internal error: a decode bucket of " + std::to_string(bucket) + " rows for " +
                std::to_string(f.B) + " sequences (at most " + std::to_string(max_b_) + ")");
  const auto B = static_cast<size_t>(f.B), Bb = static_cast<size_t>(bucket);
  std::vector<InputCopy> out;
  int64_t used = 0;
  std::vector<int32_t> v(Bb, 0);
  std::copy(f.tokens.begin(), f.tokens.end(), v.begin());
  diff_1d(kTokens, v, staging, used, out);
  std::fill(v.begin(), v.end(), 0);
  std::copy(f.pos.begin(), f.pos.end(), v.begin());
  diff_1d(kPos, v, staging, used, out);
  for (size_t i = 0; i < Bb; ++i) v[i] = static_cast<int32_t>(i);
  diff_1d(kSeq, v, staging, used, out);
  diff_1d(kRows, v, staging, used, out);
  // The block table: row b up to the block of its position (the kernels read no further).
  std::vector<int32_t>& h = held_[kBlockTable];
  const auto mb = static_cast<size_t>(mb_);
  size_t rlo = Bb, rhi = 0, clo = mb, chi = 0;
  for (size_t b = 0; b < Bb; ++b) {
    const bool pad = b >= B;
    const size_t need = pad ? 1 : static_cast<size_t>(f.pos[b] / block_size + 1);
    const int32_t* want = pad ? &pad_block : f.block_table.data() + b * mb;
    int32_t* held = h.data() + b * mb;
    size_t first = need, last = 0;
    for (size_t c = 0; c < need; ++c)
      if (held[c] != want[c]) {
        first = std::min(first, c);
        last = c + 1;
        held[c] = want[c];
      }
    if (last == 0) continue;
    rlo = std::min(rlo, b);
    rhi = b + 1;
    clo = std::min(clo, first);
    chi = std::max(chi, last);
  }
  if (rhi > rlo) {
    // One rectangle over every changed row and column, from the mirror (which now holds the step's
    // entries, and what the device holds elsewhere: those are copied back unchanged).
    const int64_t width = static_cast<int64_t>(chi - clo), height = static_cast<int64_t>(rhi - rlo);
    reserve(staging, used, width * height);
    for (size_t b = rlo; b < rhi; ++b)
      std::copy(h.begin() + static_cast<std::ptrdiff_t>(b * mb + clo), h.begin() + static_cast<std::ptrdiff_t>(b * mb + chi),
                staging.begin() + used + static_cast<int64_t>(b - rlo) * width);
    out.push_back({kBlockTable, used, static_cast<int64_t>(rlo * mb + clo), mb_, width, height});
    used += width * height;
  }
  return out;
}

}  // namespace lg::compiled
