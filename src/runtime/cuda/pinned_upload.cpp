#include "runtime/cuda/pinned_upload.h"

#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_check.h"

namespace lg::cuda {

namespace {

/// Slices below this are not worth waking a thread for.
constexpr size_t kMinSlice = size_t{1} << 20;

}  // namespace

PinnedUploader::PinnedUploader(size_t slot_bytes, int slots, int threads) : slot_bytes_(std::max<size_t>(slot_bytes, 4096)) {
  slots_.resize(static_cast<size_t>(std::max(slots, 2)));
  try {
    for (Slot& s : slots_) {
      LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.host), slot_bytes_, cudaHostAllocDefault));
      LG_CUDA_CHECK(cudaEventCreateWithFlags(&s.drained, cudaEventDisableTiming));
    }
  } catch (...) {
    for (Slot& s : slots_) {
      if (s.host) cudaFreeHost(s.host);
      if (s.drained) cudaEventDestroy(s.drained);
    }
    throw;
  }
  if (threads <= 0) threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));
  parts_ = static_cast<size_t>(threads);  // set before any worker starts: they read it unlocked
  for (size_t i = 1; i < parts_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

PinnedUploader::~PinnedUploader() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
  for (Slot& s : slots_) {
    if (s.in_flight) cudaEventSynchronize(s.drained);  // the DMA still reads the pinned buffer
    cudaEventDestroy(s.drained);
    cudaFreeHost(s.host);
  }
}

void PinnedUploader::worker(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    char* dst;
    const char* src;
    size_t n;
    {
      std::unique_lock<std::mutex> lock(m_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      dst = job_dst_, src = job_src_, n = job_n_;
    }
    const size_t lo = n * index / parts_, hi = n * (index + 1) / parts_;
    if (hi > lo) std::memcpy(dst + lo, src + lo, hi - lo);
    {
      std::lock_guard<std::mutex> lock(m_);
      --pending_;
    }
    done_.notify_one();
  }
}

void PinnedUploader::parallel_copy(char* dst, const char* src, size_t n) {
  if (parts_ == 1 || n < 2 * kMinSlice) {
    std::memcpy(dst, src, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    job_dst_ = dst, job_src_ = src, job_n_ = n;
    pending_ = workers_.size();
    ++generation_;
  }
  start_.notify_all();
  std::memcpy(dst, src, n / parts_);  // slice 0 is this thread's
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

void PinnedUploader::upload(void* dst, const void* src, size_t n, cudaStream_t stream) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (size_t off = 0; off < n; off += slot_bytes_) {
    const size_t len = std::min(slot_bytes_, n - off);
    Slot& slot = slots_[next_];
    next_ = (next_ + 1) % slots_.size();
    if (slot.in_flight) LG_CUDA_CHECK(cudaEventSynchronize(slot.drained));  // its previous DMA is done
    slot.in_flight = false;
    parallel_copy(slot.host, s + off, len);
    LG_CUDA_CHECK(cudaMemcpyAsync(d + off, slot.host, len, cudaMemcpyHostToDevice, stream));
    LG_CUDA_CHECK(cudaEventRecord(slot.drained, stream));
    slot.in_flight = true;
  }
  bytes_ += n;
}

void PinnedUploader::finish() {
  for (Slot& s : slots_) {
    if (s.in_flight) LG_CUDA_CHECK(cudaEventSynchronize(s.drained));
    s.in_flight = false;
  }
}

}  // namespace lg::cuda
