// Small RAII helpers over the CUDA runtime shared by the GPU lanes (hand-written and compiled):
// device detection that never crashes without a driver, device memory, streams, events and CUDA
// graphs (capture once, replay every decode step). All errors become lg::Error (cuda_check.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace lg::cuda {

/// True when a CUDA driver is loaded and at least one device is visible. False (no throw, no
/// crash) on machines without a driver or GPU, e.g. CI with only the toolkit installed.
bool cuda_device_available();

/// "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB" for device 0; throws lg::Error without a device.
std::string device_description();

/// Streaming multiprocessors of the current device (read once): what persistent grids are sized
/// by. Throws lg::Error without a device.
int sm_count();

/// The current device's architecture as NVRTC names it, "sm_90" for compute capability 9.0.
/// Throws lg::Error without a device.
std::string device_arch();

/// Kernel nodes in the graph being captured on `s` so far (0 when `s` is not capturing): how a
/// lane counts the launches its own capture made. Throws lg::Error on a CUDA error.
size_t captured_kernel_launches(cudaStream_t s);

/// Copies `n` bytes from host memory to device memory and returns once they are in place, for
/// work on any stream. A plain cudaMemcpy from pageable memory returns when the bytes reach the
/// driver's staging buffer, before its DMA lands, on the legacy default stream, which the
/// non-blocking streams here (Stream) do not wait for: a kernel launched on one right after could
/// read the old bytes (CUDA runtime API, "API synchronization behavior"; a kernel test caught
/// poison landing after the kernel's writes). Throws lg::Error on a CUDA error.
void copy_to_device_now(void* dst, const void* src, size_t n);

/// Sets `n` bytes of device memory to `value` and returns once they are set, for work on any
/// stream (cudaMemset returns before it runs, on the legacy stream: see copy_to_device_now).
/// Throws lg::Error on a CUDA error.
void memset_device_now(void* dst, int value, size_t n);

/// Owns one cudaMalloc allocation. Move-only; freed in the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (0 allowed: no allocation). Throws lg::Error when cudaMalloc fails, with
  /// the size asked for.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  /// Host -> device copy of `n` bytes at byte offset `offset`, in place on return for work on any
  /// stream (copy_to_device_now). Throws on overflow.
  void upload(const void* src, size_t n, size_t offset = 0);
  /// Device -> host copy of `n` bytes from byte offset `offset` (synchronous; work on a
  /// non-blocking stream that writes the buffer must be synchronised first).
  void download(void* dst, size_t n, size_t offset = 0) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Owns a non-blocking cudaStream_t (does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  /// Waits for all work on the stream; throws lg::Error on a device fault.
  void synchronize() const;

 private:
  cudaStream_t s_ = nullptr;
};

/// A timing event pair helper: record() on a stream, elapsed_ms(other) after synchronising.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s);
  /// Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_ms_since(const Event& start) const;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Marks the work just issued on `s`, while `s` is being captured, as a launch that never calls
/// griddepcontrol.launch_dependents (cuBLASLt's kernels). A kernel launched after it with
/// Programmatic Dependent Launch is captured behind a programmatic edge, which such a launch
/// would only fire at its end: the dependent's blocks would be scheduled after its completion,
/// as without PDL. GraphExec::end_capture moves those edges to the launch's
/// launch-completion port (cudaGraphKernelNodePortLaunchCompletion: all its blocks have begun),
/// so the dependent's blocks take the SM room the GEMM leaves and run what precedes their
/// griddepcontrol.wait, which still returns only once the GEMM has completed and its memory is
/// visible (cudaGraphDependencyTypeProgrammatic, CUDA runtime API). What a kernel reads before
/// its wait is then unchanged: nothing the GEMM writes, and whatever launches before the GEMM
/// wrote, which had completed before the GEMM (launched without PDL) started.
/// A no-op when `s` is not capturing, and under LG_EARLY_AFTER_GEMM=0 (a lab knob; on by default
/// since session 26: hand-written 8B step of 16 sequences of 512 positions 5.41 -> 5.28 ms, H200,
/// bench/RESULTS.md).
void note_untriggered_launch(cudaStream_t s);

/// One captured and instantiated CUDA graph. Decode steps whose kernels read their token and
/// position from device memory are captured once and replayed with launch() every step.
class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec();
  GraphExec(GraphExec&& o) noexcept;
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  /// Starts stream capture on `s` (thread-local mode). Work issued on `s` until end_capture() is
  /// recorded, not run.
  void begin_capture(cudaStream_t s);
  /// Ends capture and instantiates the graph. Throws lg::Error if anything in between was not
  /// capturable (e.g. a synchronous copy). Before instantiating, a programmatic edge out of a
  /// launch note_untriggered_launch() marked starts its dependent when the launch's blocks have
  /// all begun rather than when it ends (see there).
  void end_capture(cudaStream_t s);
  /// Ends a capture that went wrong, discarding what was captured (never throws).
  void abandon_capture(cudaStream_t s) noexcept;
  bool ready() const { return exec_ != nullptr; }
  /// How many programmatic edges the last end_capture moved to a launch-completion port.
  size_t early_dependent_edges() const { return early_edges_; }
  /// Replays the graph on `s`.
  void launch(cudaStream_t s) const;
  void reset();

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t early_edges_ = 0;
};

}  // namespace lg::cuda

namespace lg::cuda {

/// Device-to-device copy bandwidth in bytes per second, counting bytes read plus bytes written
/// (the convention of the brief's 4.2-4.3 TB/s and of shared/peers/hf_peer.py): `bytes` copied
/// `reps` times after 3 warm-up copies, timed with events. Throws lg::Error without a device.
double measure_copy_bandwidth(size_t bytes = size_t{2} << 30, int reps = 10);

}  // namespace lg::cuda
