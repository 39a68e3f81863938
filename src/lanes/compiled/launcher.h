// The compiled lane's launches: every launch of an emitted program (emit/cuda/program.h's
// LaunchPlan) for a step of T tokens from B sequences, with the grid, split-KV form and prefill
// form (packs, cuBLASLt GEMMs, epilogue; the flash attention; the experts' grouped GEMM) its rows
// call for, each as a programmatic dependent launch. The lane (compiled_lane.cpp) owns the
// buffers and the step; this class owns what the launches need besides: the split-KV scratch,
// cuBLASLt, the measurement knobs and LG_PROFILE_LAUNCHES's profile.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "emit/cuda/program.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm_lt.h"

namespace lg::compiled {

class Launcher {
 public:
  /// `prog`'s kernels loaded as `kernels` (one per prog.kernels entry), its buffers at `ptrs`
  /// (one device pointer per prog.buffers entry; neither vector may change size while the
  /// launcher lives), launched on `stream`. Allocates the split-KV scratch (zeroed counters) and
  /// reads the measurement knobs: LG_COMPILED_PDL=0 (no programmatic dependent launch),
  /// LG_COMPILED_GEMV_BPS, LG_COMPILED_MOE_MMA_T, LG_COMPILED_SKIP, LG_COMPILED_ATTN_BPS.
  Launcher(const emit::cuda::CudaProgram& prog, const std::vector<cudaKernel_t>& kernels, std::vector<void*>& ptrs,
           cudaStream_t stream);

  /// Every launch of the program for a step of T tokens from B sequences: a launch's rows are T,
  /// or B for those that compute only the rows of each sequence's last token (LaunchPlan::rows_sym).
  void launch_all(int64_t T, int64_t B);
  /// Launch `i` of the program in such a step (a decode step, T == B, leaves out LG_COMPILED_SKIP's).
  void launch_at(size_t i, int64_t T, int64_t B);
  /// LG_PROFILE_LAUNCHES: the step once, an event after every kernel; prints the time per kernel
  /// on stderr. The step's state writes are those of a real step (the caller runs it after).
  void profile(int64_t T, int64_t B);
  /// Whether launches are programmatic dependent launches (the lane's own kernels follow suit).
  bool pdl() const { return pdl_; }

 private:
  int64_t splits(const emit::cuda::SplitKv& sp, int64_t rows) const;
  static std::pair<int32_t, const emit::cuda::SplitKv&> split_form(const emit::cuda::LaunchPlan& l, int64_t rows);
  void allocate_split_kv();
  void launch_kernel(int32_t kernel, const std::vector<int32_t>& buffers, int64_t layer, int64_t blocks, int32_t block,
                     int64_t T, int64_t splits = 0, int64_t grid_y = 1);
  int resident_blocks_per_sm(int32_t kernel, int32_t block);
  int64_t gemv_blocks(const emit::cuda::LaunchPlan& l);
  void launch_one(const emit::cuda::LaunchPlan& l, int64_t T, int64_t B);
  void launch_prefill(const emit::cuda::LaunchPlan& l, int64_t T);

  const emit::cuda::CudaProgram& prog_;
  const std::vector<cudaKernel_t>& kernels_;
  std::vector<void*>& ptrs_;
  cudaStream_t stream_;
  cuda::LtGemm gemm_;
  bool pdl_ = true;
  int64_t attn_blocks_ = 0;  ///< blocks a split-KV attention launch aims at (splits())
  bool attn_bps_knob_ = false;  ///< LG_COMPILED_ATTN_BPS set: attn_blocks_ for every form
  cuda::DeviceBuffer split_part_, split_count_;  ///< its scratch: f32 partials, int counters (zero)
  /// Set by profile() only: called after each kernel of a prefill launch with its part's label.
  std::function<void(const char*)> mark_;
  int gemv_bps_ = -1;  ///< LG_COMPILED_GEMV_BPS: blocks per SM of a decode GEMV; 0 uncapped; -1 one wave
  std::optional<std::regex> skip_;  ///< LG_COMPILED_SKIP: kernels decode steps leave out (measurements)
  int64_t moe_mma_t_ = 0;  ///< LG_COMPILED_MOE_MMA_T: min_t of the experts' tensor-core form; 0: the plan's
  /// (kernel, block size) -> resident blocks per SM (resident_blocks_per_sm; decode GEMVs)
  std::map<std::pair<int32_t, int32_t>, int> occupancy_;
};

}  // namespace lg::compiled
