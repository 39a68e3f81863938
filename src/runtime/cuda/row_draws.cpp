// RowDraws (row_draws.h): the draws of a step gathered into mapped pinned memory for the kernel.
#include "runtime/cuda/row_draws.h"

#include <algorithm>
#include <string>

#include "runtime/cuda/cuda_check.h"
#include "support/error.h"

namespace lg::cuda {

RowDraws::RowDraws(int64_t max_rows) : max_rows_(max_rows) {
  const auto n = static_cast<size_t>(max_rows < 1 ? 1 : max_rows);
  try {
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&params_), n * sizeof(DrawParams), cudaHostAllocMapped));
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&rows_), n * sizeof(int32_t), cudaHostAllocMapped));
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&tokens_), n * sizeof(int32_t), cudaHostAllocMapped));
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&penalty_rows_), n * sizeof(PenaltyRow), cudaHostAllocMapped));
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

RowDraws::~RowDraws() { release(); }

void RowDraws::release() noexcept {
  if (params_) cudaFreeHost(params_);
  if (rows_) cudaFreeHost(rows_);
  if (tokens_) cudaFreeHost(tokens_);
  if (penalty_rows_) cudaFreeHost(penalty_rows_);
  if (edits_) cudaFreeHost(edits_);
  params_ = nullptr;
  rows_ = tokens_ = nullptr;
  penalty_rows_ = nullptr;
  edits_ = nullptr;
  edits_cap_ = 0;
}

namespace {

template <class T>
T* device_view(T* host) {
  T* d = nullptr;
  LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), host, 0));
  return d;
}

}  // namespace

void RowDraws::check(std::span<const SeqStep> batch, int64_t V) const {
  int64_t n = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    const SeqStep& s = batch[b];
    if (!s.draw) continue;
    if (++n > max_rows_)
      throw Error("row draws: more than " + std::to_string(max_rows_) + " sequences of a step ask for a draw");
    if (s.logit_edits.empty()) continue;
    if (s.want_logits)
      throw Error("row draws: sequence " + std::to_string(b) +
                  " asks for its logits and for a penalised draw, which edits them in place");
    for (const LogitEdit& e : s.logit_edits)
      if (e.id < 0 || e.id >= V)
        throw Error("row draws: sequence " + std::to_string(b) + "'s logit edits name token id " + std::to_string(e.id) +
                    ", outside the vocabulary of " + std::to_string(V));
  }
}

bool RowDraws::launch(float* logits, int64_t V, std::span<const SeqStep> batch, cudaStream_t stream) {
  int n = 0, penalised = 0;
  size_t edits = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    if (!batch[b].draw) continue;
    if (n == max_rows_)
      throw Error("row draws: more than " + std::to_string(max_rows_) + " sequences of a step ask for a draw");
    params_[n] = *batch[b].draw;
    rows_[n] = static_cast<int32_t>(b);
    tokens_[n] = -2;  // poison: a draw the kernel skipped shows
    edits += batch[b].logit_edits.size();
    ++n;
  }
  if (n == 0) return false;
  if (edits > 0) {
    if (edits > edits_cap_) {
      // Doubling: the step's edits grow with its sequences' histories, nearly every step, and
      // freeing mapped memory waits for the device (the step's forward is in flight by now).
      const size_t cap = std::max({edits, 2 * edits_cap_, size_t{1} << 16});
      if (edits_) LG_CUDA_CHECK(cudaFreeHost(edits_));
      edits_ = nullptr;
      edits_cap_ = 0;
      LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&edits_), cap * sizeof(LogitEdit), cudaHostAllocMapped));
      edits_cap_ = cap;
    }
    size_t at = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
      const SeqStep& s = batch[b];
      if (!s.draw || s.logit_edits.empty()) continue;
      std::copy(s.logit_edits.begin(), s.logit_edits.end(), edits_ + at);
      penalty_rows_[penalised++] = {s.penalty, static_cast<int32_t>(b), static_cast<int32_t>(s.logit_edits.size()),
                                    static_cast<int64_t>(at)};
      at += s.logit_edits.size();
    }
    launch_row_penalties(logits, V, device_view(penalty_rows_), device_view(edits_), penalised, stream);
  }
  launch_row_draws(logits, V, device_view(params_), device_view(rows_), device_view(tokens_), n, stream);
  return true;
}

void RowDraws::collect(std::span<const SeqStep> batch, std::span<SeqResult> out) const {
  int n = 0;
  for (size_t b = 0; b < batch.size() && b < out.size(); ++b)
    if (batch[b].draw) out[b].drawn = static_cast<volatile const int32_t*>(tokens_)[n++];
}

}  // namespace lg::cuda
