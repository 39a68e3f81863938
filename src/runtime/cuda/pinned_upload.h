// Host -> device copies of large, pageable host memory (an mmapped checkpoint) through pinned
// staging buffers: the weight upload of both GPU lanes. A cudaMemcpyAsync from pageable memory is
// staged by the driver through its own small pinned buffer on one thread and faults in every
// page of the mapping on the way (16 GB of an 8B checkpoint took ~3.5 s so). Here several host
// threads copy (and fault in) each chunk of the source into one of a ring of pinned buffers while
// the DMA engine drains the previous ones, so the page faults run in parallel and the copy
// engine is never idle waiting for them.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace lg::cuda {

class PinnedUploader {
 public:
  /// `slots` pinned buffers of `slot_bytes` each; `threads` host threads copy into them (0: up
  /// to 8, at most the machine's cores). Allocates the pinned memory: throws lg::Error without a
  /// CUDA device or when cudaHostAlloc fails.
  explicit PinnedUploader(size_t slot_bytes = size_t{64} << 20, int slots = 3, int threads = 0);
  /// Waits for the copies still in flight (errors are not reported here: call finish()).
  ~PinnedUploader();
  PinnedUploader(const PinnedUploader&) = delete;
  PinnedUploader& operator=(const PinnedUploader&) = delete;

  /// Enqueues the copy of `n` bytes from host memory `src` (pageable or not) to device memory
  /// `dst` on `stream`. Returns once `src` has been read: the caller may then free or unmap it;
  /// the last chunks may still be on their way to the device (stream order: later work on
  /// `stream` sees them). Throws lg::Error on a CUDA error.
  void upload(void* dst, const void* src, size_t n, cudaStream_t stream);
  /// Waits for every copy enqueued so far. Throws lg::Error on a device fault.
  void finish();

  /// Bytes uploaded since construction.
  uint64_t bytes() const { return bytes_; }

 private:
  struct Slot {
    char* host = nullptr;         ///< pinned, slot_bytes_
    cudaEvent_t drained = nullptr;  ///< recorded after the slot's last DMA
    bool in_flight = false;
  };
  /// Copies `n` bytes from src to dst, split among the workers and this thread (under 2 MiB: this
  /// thread alone).
  void parallel_copy(char* dst, const char* src, size_t n);
  void worker(size_t index);

  size_t slot_bytes_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
  uint64_t bytes_ = 0;

  // The copy workers: each job is split into parts_ slices, slice 0 for the calling thread.
  size_t parts_ = 1;
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;  ///< bumped for every job
  size_t pending_ = 0;       ///< workers still copying the current job
  bool stop_ = false;
  char* job_dst_ = nullptr;
  const char* job_src_ = nullptr;
  size_t job_n_ = 0;
};

}  // namespace lg::cuda
