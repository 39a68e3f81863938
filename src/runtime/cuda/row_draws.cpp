// RowDraws (row_draws.h): the draws of a step gathered into mapped pinned memory for the kernel.
#include "runtime/cuda/row_draws.h"

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
  params_ = nullptr;
  rows_ = tokens_ = nullptr;
}

bool RowDraws::launch(const float* logits, int64_t V, std::span<const SeqStep> batch, cudaStream_t stream) {
  int n = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    if (!batch[b].draw) continue;
    if (n == max_rows_)
      throw Error("row draws: more than " + std::to_string(max_rows_) + " sequences of a step ask for a draw");
    params_[n] = *batch[b].draw;
    rows_[n] = static_cast<int32_t>(b);
    tokens_[n] = -2;  // poison: a draw the kernel skipped shows
    ++n;
  }
  if (n == 0) return false;
  DrawParams* d_params = nullptr;
  int32_t *d_rows = nullptr, *d_tokens = nullptr;
  LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_params), params_, 0));
  LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_rows), rows_, 0));
  LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_tokens), tokens_, 0));
  launch_row_draws(logits, V, d_params, d_rows, d_tokens, n, stream);
  return true;
}

void RowDraws::collect(std::span<const SeqStep> batch, std::span<SeqResult> out) const {
  int n = 0;
  for (size_t b = 0; b < batch.size() && b < out.size(); ++b)
    if (batch[b].draw) out[b].drawn = static_cast<volatile const int32_t*>(tokens_)[n++];
}

}  // namespace lg::cuda
